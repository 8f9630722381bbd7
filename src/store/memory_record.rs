//! A record as the memory store keeps it ([`Slim`]): one allocation of 32
//! bytes holding its key (the id's 16 random bytes rather than its
//! 22-character text; the table finds an [`Entry`] by it, so a slot is one
//! pointer), plus one with the rest packed ([`Layout`]): its state, times,
//! principal, CSRF token, request digest while pending, outcome and, once
//! its request completed, the completion claim it keeps.
//!
//! A record changes state once (pending → a terminal status), so its audit
//! log is two lines at most and its version 0 or 1: both are rebuilt from
//! the creation time, the settling time and who settled it, where each
//! record kept a vector of lines with a copy of the principal in each. The
//! outcome is kept packed ([`packed_json`]) and read back on demand. What
//! settling forgets: a URL flow's CSRF token (its page answers 409 before
//! comparing any token) and the request digest (nothing reads a settled
//! record's digest: `Record::request_digest` reads `None` then). What one costs is
//! [`Slim::heap_bytes`], which the store sums per kind for its budget and
//! `/stats`.

use std::ops::{Deref, DerefMut, Range};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;

use super::heap_size::heap_bytes;
use super::keyed::keyed_by_its_key;
use super::memory_claim::{ClaimEntry, ClaimRef};
use super::packed_json;
use super::record::{AuditEntry, Mode, NewRecord, Record, Status, StoreError};
use super::varint;

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

/// One record, compact. See the module docs.
#[derive(Debug)]
pub(super) struct Slim {
    /// Its key in the store's table (the id's 16 bytes).
    key: RecordKey,
    /// Everything else, packed: see [`Layout`]. Its times are there too
    /// (varints: the creation time, the expiry as an offset from it), where
    /// two fixed fields took 16 bytes of the box.
    parts: Box<[u8]>,
}

/// The state byte, first of [`Slim::parts`]: the status (three bits), then
/// these flags.
const URL_MODE: u8 = 1 << 3;
/// Settled by its principal (else by the store: expiry).
const BY_OWNER: u8 = 1 << 4;
/// Audit lines still kept (the purge drops the ones past retention).
const CREATION_LINE: u8 = 1 << 5;
const SETTLING_LINE: u8 = 1 << 6;
const HAS_OUTCOME: u8 = 1 << 7;
const STATUS: u8 = 0b111;

fn status_bits(s: Status) -> u8 {
    match s {
        Status::Pending => 0,
        Status::Completed => 1,
        Status::Declined => 2,
        Status::Cancelled => 3,
        Status::Expired => 4,
    }
}

fn status_of(state: u8) -> Status {
    match state & STATUS {
        0 => Status::Pending,
        1 => Status::Completed,
        2 => Status::Declined,
        3 => Status::Cancelled,
        _ => Status::Expired,
    }
}

/// Where things are in [`Slim::parts`]: the state byte; the creation time
/// and the expiry (an offset from it); the principal's length, then the
/// client id's and the CSRF token's plus one (0: absent), as [`varint`]s;
/// while pending, the 32-byte request digest, once settled the settling
/// time (an offset from the creation time) and the kept claim's length (0:
/// none); then the three texts, the claim (its keep time as an offset from
/// the creation time, then its body, see [`super::memory_claim`]) and the
/// outcome (the rest, [`HAS_OUTCOME`], packed: [`packed_json`]).
struct Layout {
    created_at_ms: u64,
    expires_at_ms: u64,
    texts: [Option<Range<usize>>; 3],
    digest: Option<usize>,
    settled_at_ms: u64,
    claim: Option<Range<usize>>,
    outcome: Option<Range<usize>>,
}

/// The creation time and expiry packed after the state byte of `b`, and
/// where what follows them starts.
fn times(b: &[u8]) -> (u64, u64, usize) {
    let mut at = 1;
    let created = varint::get(b, &mut at).unwrap_or(0);
    let expires = varint::at_offset(created, varint::get(b, &mut at).unwrap_or(0));
    (created, expires, at)
}

/// What [`Layout::build`] packs.
struct Fields<'a> {
    state: u8,
    created_at_ms: u64,
    expires_at_ms: u64,
    texts: [Option<&'a str>; 3],
    digest: Option<&'a [u8; 32]>,
    settled_at_ms: u64,
    claim: Option<ClaimRef<'a>>,
    outcome: Option<&'a [u8]>,
}

impl Layout {
    fn read(b: &[u8]) -> Layout {
        let (created_at_ms, expires_at_ms, mut at) = times(b);
        let mut next = || varint::get(b, &mut at).unwrap_or(0) as usize;
        let lens = [Some(next()), next().checked_sub(1), next().checked_sub(1)];
        let (mut digest, mut settled_at_ms, mut claim_len) = (None, 0, 0);
        if status_of(b[0]) == Status::Pending {
            digest = Some(at);
            at += 32;
        } else {
            let z = varint::get(b, &mut at).unwrap_or(0);
            settled_at_ms = varint::at_offset(created_at_ms, z);
            claim_len = varint::get(b, &mut at).unwrap_or(0) as usize;
        }
        let mut span = |n: usize| {
            let r = at..at + n;
            at += n;
            r
        };
        let texts = lens.map(|n| n.map(&mut span));
        let claim = (claim_len > 0).then(|| span(claim_len));
        let outcome = (b[0] & HAS_OUTCOME != 0).then_some(at..b.len());
        Layout {
            created_at_ms,
            expires_at_ms,
            texts,
            digest,
            settled_at_ms,
            claim,
            outcome,
        }
    }

    fn build(f: Fields<'_>) -> Box<[u8]> {
        let created_at_ms = f.created_at_ms;
        let claim_keep = f
            .claim
            .map(|c| varint::offset(created_at_ms, c.keep_until_ms));
        let claim_len = f
            .claim
            .zip(claim_keep)
            .map_or(0, |(c, k)| varint::len(k) + c.body.len());
        let mut b = Vec::with_capacity(
            24 + f.texts.iter().flatten().map(|t| t.len()).sum::<usize>()
                + claim_len
                + f.outcome.map_or(0, <[u8]>::len),
        );
        let outcome = if f.outcome.is_some() { HAS_OUTCOME } else { 0 };
        b.push(f.state & !HAS_OUTCOME | outcome);
        varint::put(&mut b, created_at_ms);
        varint::put(&mut b, varint::offset(created_at_ms, f.expires_at_ms));
        let [principal, client, csrf] = f.texts;
        varint::put(&mut b, principal.map_or(0, str::len) as u64);
        for t in [client, csrf] {
            varint::put(&mut b, t.map_or(0, |t| t.len() as u64 + 1));
        }
        if status_of(f.state) == Status::Pending {
            b.extend_from_slice(f.digest.unwrap_or(&[0; 32]));
        } else {
            varint::put(&mut b, varint::offset(created_at_ms, f.settled_at_ms));
            varint::put(&mut b, claim_len as u64);
        }
        for t in f.texts.into_iter().flatten() {
            b.extend_from_slice(t.as_bytes());
        }
        if let (Some(c), Some(k)) = (f.claim, claim_keep) {
            varint::put(&mut b, k);
            b.extend_from_slice(c.body);
        }
        b.extend_from_slice(f.outcome.unwrap_or_default());
        b.into_boxed_slice()
    }
}

impl Slim {
    /// The pending record for `new`.
    pub(super) fn new(key: RecordKey, new: &NewRecord) -> Slim {
        let state = CREATION_LINE | if new.mode == Mode::Url { URL_MODE } else { 0 };
        let parts = Layout::build(Fields {
            state,
            created_at_ms: new.created_at_ms,
            expires_at_ms: new.expires_at_ms,
            texts: [
                Some(&new.principal),
                new.client_id.as_deref(),
                new.csrf_token.as_deref(),
            ],
            digest: Some(&new.request_digest),
            settled_at_ms: 0,
            claim: None,
            outcome: None,
        });
        Slim { key, parts }
    }

    /// The same record under `key`.
    pub(super) fn keyed(self, key: RecordKey) -> Slim {
        Slim { key, ..self }
    }

    pub(super) fn key(&self) -> &RecordKey {
        &self.key
    }

    fn layout(&self) -> Layout {
        Layout::read(&self.parts)
    }

    /// When it was created.
    pub(super) fn created_at_ms(&self) -> u64 {
        times(&self.parts).0
    }

    fn text(&self, l: &Layout, i: usize) -> Option<&str> {
        let r = l.texts[i].clone()?;
        std::str::from_utf8(self.parts.get(r)?).ok()
    }

    /// Its fields as they are, for [`Layout::build`] to change some.
    fn fields<'a>(&'a self, l: &Layout) -> Fields<'a> {
        Fields {
            state: self.parts[0],
            created_at_ms: l.created_at_ms,
            expires_at_ms: l.expires_at_ms,
            texts: [0, 1, 2].map(|i| self.text(l, i)),
            digest: l
                .digest
                .and_then(|at| self.parts.get(at..at + 32)?.try_into().ok()),
            settled_at_ms: l.settled_at_ms,
            claim: self.claim_in(l),
            outcome: l.outcome.clone().and_then(|r| self.parts.get(r)),
        }
    }

    /// The record it holds, as stored (not as seen at a time).
    pub(super) fn record(&self) -> Record {
        let l = self.layout();
        let f = self.fields(&l);
        Record {
            id: id_of(&self.key),
            principal: f.texts[0].unwrap_or_default().to_owned(),
            client_id: f.texts[1].map(str::to_owned),
            request_digest: f.digest.copied(),
            mode: self.mode(),
            status: self.status(),
            created_at_ms: l.created_at_ms,
            expires_at_ms: l.expires_at_ms,
            version: self.version(),
            csrf_token: f.texts[2].map(str::to_owned),
            // Packed by `settle` from a Value, so it reads back as one.
            result: f.outcome.and_then(|b| packed_json::from_slice(b).ok()),
        }
    }

    pub(super) fn principal(&self) -> &str {
        self.text(&self.layout(), 0).unwrap_or_default()
    }

    pub(super) fn status(&self) -> Status {
        status_of(self.parts[0])
    }

    pub(super) fn mode(&self) -> Mode {
        if self.parts[0] & URL_MODE != 0 {
            Mode::Url
        } else {
            Mode::Form
        }
    }

    pub(super) fn expires_at_ms(&self) -> u64 {
        times(&self.parts).1
    }

    /// Pending and past its expiry at `now_ms`.
    pub(super) fn is_due(&self, now_ms: u64) -> bool {
        self.status() == Status::Pending && now_ms >= self.expires_at_ms()
    }

    fn version(&self) -> u64 {
        u64::from(self.status() != Status::Pending)
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
        debug_assert!(Status::can_transition(self.status(), to));
        let outcome = result.map(packed_json::to_vec);
        let l = self.layout();
        let f = self.fields(&l);
        let owner = if by_owner { BY_OWNER } else { 0 };
        self.parts = Layout::build(Fields {
            state: (f.state & !STATUS & !BY_OWNER) | status_bits(to) | owner | SETTLING_LINE,
            // The CSRF token goes: a settled flow's page answers 409
            // before any token is compared. The digest goes: nothing
            // reads a settled record's.
            texts: [f.texts[0], f.texts[1], None],
            digest: None,
            settled_at_ms: at_ms,
            outcome: outcome.as_deref(),
            ..f
        });
        Ok(())
    }

    fn claim_in(&self, l: &Layout) -> Option<ClaimRef<'_>> {
        let b = self.parts.get(l.claim.clone()?)?;
        let mut at = 0;
        let keep = varint::get(b, &mut at)?;
        Some(ClaimRef {
            keep_until_ms: varint::at_offset(l.created_at_ms, keep),
            body: &b[at..],
        })
    }

    /// The completion claim it keeps (see [`Slim::keep_claim`]).
    pub(super) fn claim(&self) -> Option<ClaimRef<'_>> {
        self.claim_in(&self.layout())
    }

    /// Keeps `claim` in this settled record's entry, so the completed flow
    /// holds one entry.
    pub(super) fn keep_claim(&mut self, claim: ClaimRef<'_>) {
        debug_assert!(self.status() != Status::Pending && self.claim().is_none());
        self.rebuild(Some(claim));
    }

    /// Takes its claim out (to forget it, or to keep it elsewhere).
    pub(super) fn take_claim(&mut self) -> Option<ClaimEntry> {
        let claim = ClaimEntry::from_ref(&self.key, self.claim()?);
        self.rebuild(None);
        Some(claim)
    }

    /// The same parts with `claim` in place of the one it keeps.
    fn rebuild(&mut self, claim: Option<ClaimRef<'_>>) {
        let l = self.layout();
        self.parts = Layout::build(Fields {
            claim,
            ..self.fields(&l)
        });
    }

    fn audit_bits(&self) -> u8 {
        self.parts[0]
    }

    /// Its audit log, oldest first.
    pub(super) fn audit(&self) -> Vec<AuditEntry> {
        let owner = || Some(self.principal().to_owned());
        let (audit, status) = (self.audit_bits(), self.status());
        let mut lines = Vec::new();
        if audit & CREATION_LINE != 0 {
            lines.push(AuditEntry {
                at_ms: self.created_at_ms(),
                from: None,
                to: Status::Pending,
                actor_principal: owner(),
                version: 0,
            });
        }
        if audit & SETTLING_LINE != 0 && status != Status::Pending {
            lines.push(AuditEntry {
                at_ms: self.layout().settled_at_ms,
                from: Some(Status::Pending),
                to: status,
                actor_principal: if audit & BY_OWNER != 0 { owner() } else { None },
                version: 1,
            });
        }
        lines
    }

    /// How many audit lines it keeps.
    pub(super) fn audit_lines(&self) -> u64 {
        let audit = self.audit_bits();
        u64::from(audit & CREATION_LINE != 0)
            + u64::from(audit & SETTLING_LINE != 0 && self.status() != Status::Pending)
    }

    /// When it settled, if it keeps that audit line.
    fn settling_line_at(&self) -> Option<u64> {
        (self.audit_bits() & SETTLING_LINE != 0 && self.status() != Status::Pending)
            .then(|| self.layout().settled_at_ms)
    }

    /// How many of its audit lines are at or before `cut`.
    pub(super) fn audit_past(&self, cut: u64) -> u64 {
        u64::from(self.audit_bits() & CREATION_LINE != 0 && self.created_at_ms() <= cut)
            + u64::from(self.settling_line_at().is_some_and(|at| at <= cut))
    }

    /// Drops the audit lines at or before `cut`; how many went.
    pub(super) fn purge_audit(&mut self, cut: u64) -> u64 {
        let mut gone = 0;
        if self.audit_bits() & CREATION_LINE != 0 && self.created_at_ms() <= cut {
            self.parts[0] &= !CREATION_LINE;
            gone += 1;
        }
        if self.settling_line_at().is_some_and(|at| at <= cut) {
            self.parts[0] &= !SETTLING_LINE;
            gone += 1;
        }
        gone
    }

    /// Heap bytes it holds: its box and its parts.
    pub(super) fn heap_bytes(&self) -> u64 {
        heap_bytes(size_of::<Slim>()) + heap_bytes(self.parts.len())
    }

    /// What [`Slim::heap_bytes`] would be with `claim` kept (it keeps
    /// none, so its claim length reads 0, one byte).
    pub(super) fn heap_bytes_with_claim(&self, claim: ClaimRef<'_>) -> u64 {
        let len = varint::len(varint::offset(self.created_at_ms(), claim.keep_until_ms))
            + claim.body.len();
        heap_bytes(size_of::<Slim>())
            + heap_bytes(self.parts.len() - 1 + varint::len(len as u64) + len)
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

// Hashes as its key, so the table finds it by a key.
keyed_by_its_key!(Entry);

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
        // more here, 36 B less in the slot. Its times moved into its parts
        // (9 B of varints at today's clock): a box of 32 B, where 48 B held
        // them as two fixed fields (96 B before its state, settling time and
        // digest moved into its parts).
        assert_eq!(size_of::<Slim>(), 32);
        let now = 1_765_000_000_000;
        let at_today = |mut r: NewRecord| {
            (r.created_at_ms, r.expires_at_ms) = (now, now + 600_000);
            r
        };
        let form = Slim::new([9; 16], &at_today(new(Mode::Form, None)));
        assert_eq!(form.expires_at_ms(), now + 600_000);
        assert!(
            form.heap_bytes() <= 96,
            "form record: {} B",
            form.heap_bytes()
        );
        let csrf = "c".repeat(32);
        let mut url = Slim::new([9; 16], &at_today(new(Mode::Url, Some(&csrf))));
        url.settle(
            Status::Completed,
            true,
            now + 2_000,
            Some(&json!({"masked": "sk-l…wxyz"})),
        )
        .unwrap();
        assert_eq!(url.record().created_at_ms, now);
        assert!(url.heap_bytes() <= 96, "URL record: {} B", url.heap_bytes());
    }

    #[test]
    fn settling_forgets_the_digest_and_a_kept_claim_reads_back_whole() {
        let mut s = Slim::new([9; 16], &new(Mode::Url, Some("tok")));
        assert_eq!(s.record().request_digest, Some([3; 32]));
        s.settle(Status::Declined, false, 900, None).unwrap();
        let r = s.record();
        assert_eq!(
            (r.request_digest, r.status, r.mode),
            (None, Status::Declined, Mode::Url)
        );
        assert_eq!(
            s.audit()[1].at_ms,
            900,
            "an offset before its creation time reads back"
        );
        let before = s.heap_bytes();
        // Keep times either side of the creation time, near and far.
        for keep in [646_000, 0, u64::MAX] {
            let body = [2, b'{', b'}'];
            let c = ClaimRef {
                keep_until_ms: keep,
                body: &body,
            };
            let with = s.heap_bytes_with_claim(c);
            s.keep_claim(c);
            assert_eq!(s.heap_bytes(), with, "counted before it is kept");
            let got = s.claim().unwrap();
            assert_eq!((got.keep_until_ms, got.body), (keep, &body[..]));
            assert_eq!(s.principal(), "ek-user-0001");
            let out = s.take_claim().unwrap();
            assert_eq!(out.view().keep_until_ms, keep);
            assert!(s.claim().is_none());
            assert_eq!(s.heap_bytes(), before);
        }
    }
}
