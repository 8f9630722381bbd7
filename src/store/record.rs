//! Record types: what a pending elicitation looks like, its legal
//! transitions, completion outcomes and audit entries, and [`StoreError`],
//! the typed answer when an operation on them fails.
//!
//! # Transition table
//!
//! | from \ to   | Pending | Completed | Declined | Cancelled | Expired |
//! |-------------|---------|-----------|----------|-----------|---------|
//! | (create)    | yes     | –         | –        | –         | –       |
//! | Pending     | –       | yes       | yes      | yes       | yes     |
//! | Completed   | –       | –         | –        | –         | –       |
//! | Declined    | –       | –         | –        | –         | –       |
//! | Cancelled   | –       | –         | –        | –         | –       |
//! | Expired     | –       | –         | –        | –         | –       |
//!
//! Only a pending record changes state, and it changes exactly once. A
//! pending record whose `expires_at_ms` is not after `now` can only become
//! `Expired`.
//!
//! # No secrets
//!
//! Records and audit entries are plain data meant to be logged and shown to
//! operators. Callers MUST mask secrets (see [`super::mask_secret`]) before
//! putting anything into [`Outcome::Completed`]; the store never sees a raw
//! API key. The CSRF token is the only sensitive field and `Debug` redacts it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::str::FromStr;

/// Longest accepted principal, client id or CSRF token, in bytes.
pub const MAX_FIELD_LEN: usize = 1024;

/// How the user is asked: an in-client form or an out-of-band URL flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Form mode (`requestedSchema`), also every legacy push elicitation.
    Form,
    /// URL mode: the user completes a page the server hosts.
    Url,
}

impl Mode {
    /// Lower-case name as stored and serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Form => "form",
            Mode::Url => "url",
        }
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "form" => Ok(Mode::Form),
            "url" => Ok(Mode::Url),
            other => Err(format!("unknown mode {other:?}")),
        }
    }
}

/// Lifecycle state of a record; see the module docs for the legal transitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Waiting for the user.
    Pending,
    /// The user answered (form content submitted, or URL flow finished).
    Completed,
    /// The user explicitly refused.
    Declined,
    /// The interaction ended without a decision.
    Cancelled,
    /// Nobody answered before `expires_at_ms`.
    Expired,
}

impl Status {
    /// Every status, in declaration order.
    pub const ALL: [Status; 5] = [
        Status::Pending,
        Status::Completed,
        Status::Declined,
        Status::Cancelled,
        Status::Expired,
    ];

    /// Lower-case name as stored and serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Completed => "completed",
            Status::Declined => "declined",
            Status::Cancelled => "cancelled",
            Status::Expired => "expired",
        }
    }

    /// True for every state except `Pending`.
    pub fn is_terminal(self) -> bool {
        self != Status::Pending
    }

    /// The transition table: only `Pending` → a terminal state is legal.
    pub fn can_transition(from: Status, to: Status) -> bool {
        from == Status::Pending && to.is_terminal()
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Status {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Status::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| format!("unknown status {s:?}"))
    }
}

/// What a caller wants to store; the store assigns the id and version.
#[derive(Clone, PartialEq, Eq)]
pub struct NewRecord {
    /// Authenticated principal the flow is bound to (never a session id alone).
    pub principal: String,
    /// OAuth client id or similar, when known.
    pub client_id: Option<String>,
    /// SHA-256 of the originating request's method and key parameters.
    pub request_digest: [u8; 32],
    /// Form or URL mode.
    pub mode: Mode,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// Expiry time; must be after `created_at_ms`.
    pub expires_at_ms: u64,
    /// Anti-CSRF token the URL flow page must echo, if any.
    pub csrf_token: Option<String>,
    /// The completion key ([`super::Store::claim`]) of the request this
    /// record serves, if any. The memory store keys the origin's first
    /// record by it, so the claim that completes the request is kept in the
    /// settled record's entry (one entry per completed flow); the id stays
    /// as unguessable as a random one where the key holds a random origin
    /// id. Other stores ignore it.
    pub origin: Option<String>,
}

impl fmt::Debug for NewRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewRecord")
            .field("principal", &self.principal)
            .field("client_id", &self.client_id)
            .field("mode", &self.mode)
            .field("created_at_ms", &self.created_at_ms)
            .field("expires_at_ms", &self.expires_at_ms)
            .field(
                "csrf_token",
                &self.csrf_token.as_ref().map(|_| "<redacted>"),
            )
            .finish_non_exhaustive()
    }
}

fn check_text(field: &'static str, value: &str, allow_empty: bool) -> Result<(), StoreError> {
    let bad = |reason: &str| StoreError::InvalidInput {
        field,
        reason: reason.to_owned(),
    };
    if !allow_empty && value.is_empty() {
        return Err(bad("must not be empty"));
    }
    if value.len() > MAX_FIELD_LEN {
        return Err(bad("longer than 1024 bytes"));
    }
    if value.chars().any(char::is_control) {
        return Err(bad("contains control characters"));
    }
    Ok(())
}

impl NewRecord {
    /// Checks the fields every backend relies on: a non-empty principal,
    /// bounded text without control characters, and a sane time window that
    /// fits SQLite's signed 64-bit integers.
    pub fn validate(&self) -> Result<(), StoreError> {
        check_text("principal", &self.principal, false)?;
        if let Some(c) = &self.client_id {
            check_text("client_id", c, true)?;
        }
        if let Some(t) = &self.csrf_token {
            check_text("csrf_token", t, false)?;
        }
        let max = i64::MAX as u64;
        if self.created_at_ms > max || self.expires_at_ms > max {
            return Err(StoreError::InvalidInput {
                field: "expires_at_ms",
                reason: "timestamps must not exceed i64::MAX".into(),
            });
        }
        if self.expires_at_ms <= self.created_at_ms {
            return Err(StoreError::InvalidInput {
                field: "expires_at_ms",
                reason: "must be after created_at_ms".into(),
            });
        }
        Ok(())
    }
}

/// One pending (or settled) elicitation.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// 128-bit random id, URL-safe base64 without padding (22 characters).
    pub id: String,
    /// Principal the record is bound to.
    pub principal: String,
    /// Client id, when known.
    pub client_id: Option<String>,
    /// Digest of the originating request; `None` from the memory store
    /// once the record settled (nothing reads a settled record's digest,
    /// and a completed flow's entry is smaller without it).
    pub request_digest: Option<[u8; 32]>,
    /// Form or URL mode.
    pub mode: Mode,
    /// Current status (as of the read; see [`super::Store::get`]).
    pub status: Status,
    /// Creation time, ms since the epoch.
    pub created_at_ms: u64,
    /// Expiry time, ms since the epoch; pending records expire at this instant.
    pub expires_at_ms: u64,
    /// Completion version: 0 at creation, bumped by every transition.
    pub version: u64,
    /// Anti-CSRF token for the URL flow page (redacted in `Debug`).
    pub csrf_token: Option<String>,
    /// Non-secret outcome, e.g. a masked key or the `ElicitResult` content.
    pub result: Option<Value>,
}

impl Record {
    /// Builds the initial pending record for `new` under `id`.
    pub fn from_new(id: String, new: &NewRecord) -> Record {
        Record {
            id,
            principal: new.principal.clone(),
            client_id: new.client_id.clone(),
            request_digest: Some(new.request_digest),
            mode: new.mode,
            status: Status::Pending,
            created_at_ms: new.created_at_ms,
            expires_at_ms: new.expires_at_ms,
            version: 0,
            csrf_token: new.csrf_token.clone(),
            result: None,
        }
    }

    /// True when the record is pending but its expiry has passed at `now_ms`.
    pub fn is_due(&self, now_ms: u64) -> bool {
        self.status == Status::Pending && now_ms >= self.expires_at_ms
    }

    /// The record as seen at `now_ms`: a due pending record reads `Expired`
    /// (version unchanged until the transition is persisted).
    pub fn seen_at(mut self, now_ms: u64) -> Record {
        if self.is_due(now_ms) {
            self.status = Status::Expired;
        }
        self
    }

    /// Constant-time comparison of `candidate` with the stored CSRF token;
    /// false when the record has none.
    pub fn csrf_matches(&self, candidate: &str) -> bool {
        use subtle::ConstantTimeEq;
        match &self.csrf_token {
            Some(t) => bool::from(t.as_bytes().ct_eq(candidate.as_bytes())),
            None => false,
        }
    }
}

impl fmt::Debug for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Record")
            .field("id", &self.id)
            .field("principal", &self.principal)
            .field("client_id", &self.client_id)
            .field("mode", &self.mode)
            .field("status", &self.status)
            .field("created_at_ms", &self.created_at_ms)
            .field("expires_at_ms", &self.expires_at_ms)
            .field("version", &self.version)
            .field(
                "csrf_token",
                &self.csrf_token.as_ref().map(|_| "<redacted>"),
            )
            .field("result", &self.result)
            .finish_non_exhaustive()
    }
}

/// How a caller settles a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Answered; the value is the non-secret (already masked) result.
    Completed(Value),
    /// Explicitly refused.
    Declined,
    /// Ended without a decision.
    Cancelled,
}

impl Outcome {
    /// The terminal status this outcome moves a record to.
    pub fn status(&self) -> Status {
        match self {
            Outcome::Completed(_) => Status::Completed,
            Outcome::Declined => Status::Declined,
            Outcome::Cancelled => Status::Cancelled,
        }
    }

    /// The value stored in `Record::result`.
    pub fn into_result(self) -> Option<Value> {
        match self {
            Outcome::Completed(v) => Some(v),
            Outcome::Declined | Outcome::Cancelled => None,
        }
    }
}

/// Successful answer of [`super::Store::complete`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completion {
    /// This call performed the transition: run the side effect now.
    Applied(Record),
    /// An earlier call already settled the record with the same status:
    /// do not repeat the side effect.
    AlreadyDone(Record),
}

impl Completion {
    /// The record after the call.
    pub fn record(&self) -> &Record {
        match self {
            Completion::Applied(r) | Completion::AlreadyDone(r) => r,
        }
    }

    /// True when this call won the compare-and-set.
    pub fn is_applied(&self) -> bool {
        matches!(self, Completion::Applied(_))
    }
}

/// One line of a record's audit log. Holds no payloads, only states.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// When the transition happened (the caller's `now_ms`).
    pub at_ms: u64,
    /// Previous status; `None` for the creation entry.
    pub from: Option<Status>,
    /// New status.
    pub to: Status,
    /// Principal who caused it; `None` when the store itself expired the record.
    pub actor_principal: Option<String>,
    /// Record version after the transition.
    pub version: u64,
}

/// Operation counters since the store value was opened (not persisted).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Records created.
    pub created: u64,
    /// Completions that won the compare-and-set.
    pub applied: u64,
    /// Duplicate completions answered with `AlreadyDone`.
    pub already_done: u64,
    /// Completions refused (not found, wrong principal, expired, illegal).
    pub rejected: u64,
    /// Pending records moved to `Expired` (sweeps and late completions).
    pub expired: u64,
    /// `claim` calls that took their key.
    pub claims_won: u64,
    /// `claim` calls whose key was already taken.
    pub claims_lost: u64,
    /// Records forgotten by `purge`.
    pub purged_records: u64,
    /// Audit entries forgotten by `purge`.
    pub purged_audit: u64,
    /// Claims forgotten by `purge`.
    pub purged_claims: u64,
    /// Calls to a backing service (Redis network round trips, each one
    /// command or one script); 0 for in-process stores.
    #[serde(default)]
    pub backend_calls: u64,
    /// Pending records forgotten before their expiry to make room in a
    /// full store for a principal holding fewer (memory store only).
    #[serde(default)]
    pub evicted: u64,
}

/// Why a store operation failed.
///
/// The first four variants are answers about a record (the server maps them
/// to protocol responses); the rest are faults of input or storage.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No record has this id.
    #[error("no pending elicitation with this id")]
    NotFound,
    /// The record belongs to another principal; nothing was changed.
    #[error("the elicitation belongs to another principal")]
    WrongPrincipal,
    /// The record expired before this completion; it is now `Expired`.
    #[error("the elicitation expired before it was completed")]
    Expired,
    /// The record is already settled with a different outcome.
    #[error("illegal transition from {from} to {to}: only pending records can change state")]
    IllegalTransition {
        /// Status the record has.
        from: Status,
        /// Status the caller asked for.
        to: Status,
    },
    /// A field of the caller's input is unusable.
    #[error("invalid {field}: {reason}")]
    InvalidInput {
        /// Name of the offending field.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// `open_url` got a spec it does not understand.
    #[error(
        "unsupported store spec {spec:?}: {reason} (use `memory`, `sqlite:PATH` or `redis://HOST:PORT/DB`)"
    )]
    BadSpec {
        /// The spec as given.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A Redis store that would forget completions in a restart.
    #[error(
        "refusing the store {spec}: {why}. Exactly-once needs Redis to keep its data: start it \
         with --appendonly yes --appendfsync always, or accept the risk with \
         --allow-volatile-store"
    )]
    Volatile {
        /// The spec as given.
        spec: String,
        /// What Redis keeps, or why that is unknown.
        why: String,
    },
    /// A Redis store that may evict completion records (`allkeys-*`).
    #[error(
        "refusing the store {spec}: {why}, completion records included, and a retry of a request \
         whose record was evicted runs it again (exactly-once lost; the store's epoch does not \
         notice an eviction). Set maxmemory-policy noeviction (a write to a full Redis then gets \
         503) or a volatile-* policy (this store sets no TTL, so it evicts none of its keys), or \
         accept the risk with --allow-evicting-store"
    )]
    Evicting {
        /// The spec as given.
        spec: String,
        /// What Redis may evict, or why that is unknown.
        why: String,
    },
    /// A stored row cannot be read back as a record.
    #[error("corrupt stored record {id:?}: {reason}")]
    Corrupt {
        /// Id of the row (or the table when no id is known).
        id: String,
        /// What could not be decoded.
        reason: String,
    },
    /// The database was written by a newer elicitkit.
    #[error("database schema version {found} is newer than the supported version {supported}")]
    UnsupportedSchema {
        /// `user_version` found in the file.
        found: i64,
        /// Highest version this build understands.
        supported: i64,
    },
    /// A thread panicked while holding the store's lock; the store refuses further use.
    #[error("store lock poisoned by a panicked thread")]
    Poisoned,
    /// The backing service (Redis) cannot be reached or did not answer in
    /// time; nothing is known to have changed. The server answers 503.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The store's epoch is not the one the request began in: its data set
    /// was lost and begun anew since (a Redis that came back empty, a
    /// memory store in a restarted process), so a completion recorded
    /// then may be gone. Nothing was claimed.
    #[error("the store's data was reset since this request began (epoch {now:#x})")]
    EpochChanged {
        /// The store's epoch now.
        now: u64,
    },
    /// The principal already holds its share of the in-memory store's
    /// budget in pending records (1/8 of `--store-memory-budget`).
    #[error(
        "this principal holds {held} pending elicitations, its share of the store \
         (--store-memory-budget / 8); one expires within {frees_in_ms} ms"
    )]
    OverShare {
        /// Pending records the principal holds.
        held: usize,
        /// Milliseconds until the earliest of them expires.
        frees_in_ms: u64,
    },
    /// The in-memory store's budget (`--store-memory-budget`) is spent:
    /// nothing was written and nothing live was forgotten to make room. The
    /// server answers 503 with `Retry-After`; a retry succeeds once purges
    /// free room.
    #[error("the in-memory store is full ({used} of its {budget}-byte budget in use)")]
    Full {
        /// Bytes in use (estimated).
        used: u64,
        /// The budget.
        budget: u64,
    },
    /// The backing service refused a command (not a connection fault).
    #[error("store backend error: {0}")]
    Backend(String),
    /// SQLite reported an error.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// Decides a completion against a record that is not pending-and-live:
/// expired → `Expired`, same terminal status → `AlreadyDone`, anything else
/// → `IllegalTransition`.
pub(crate) fn settle_against(rec: Record, target: Status) -> Result<Completion, StoreError> {
    match rec.status {
        Status::Expired => Err(StoreError::Expired),
        s if s == target => Ok(Completion::AlreadyDone(rec)),
        from => Err(StoreError::IllegalTransition { from, to: target }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pending_to_terminal_is_legal() {
        for from in Status::ALL {
            for to in Status::ALL {
                let legal = Status::can_transition(from, to);
                assert_eq!(legal, from == Status::Pending && to != Status::Pending);
            }
        }
    }

    #[test]
    fn status_round_trips_through_text() {
        for s in Status::ALL {
            assert_eq!(s.as_str().parse::<Status>(), Ok(s));
        }
        assert!("PENDING".parse::<Status>().is_err());
    }

    #[test]
    fn debug_redacts_csrf_token() {
        let new = NewRecord {
            principal: "alice".into(),
            client_id: None,
            request_digest: [0; 32],
            mode: Mode::Url,
            created_at_ms: 1,
            expires_at_ms: 2,
            csrf_token: Some("topsecret".into()),
            origin: None,
        };
        let rec = Record::from_new("x".into(), &new);
        assert!(!format!("{rec:?}").contains("topsecret"));
        assert!(!format!("{new:?}").contains("topsecret"));
        assert!(rec.csrf_matches("topsecret"));
        assert!(!rec.csrf_matches("topsecreT"));
    }

    #[test]
    fn validate_rejects_bad_windows_and_principals() {
        let mut new = NewRecord {
            principal: "".into(),
            client_id: None,
            request_digest: [0; 32],
            mode: Mode::Form,
            created_at_ms: 10,
            expires_at_ms: 20,
            csrf_token: None,
            origin: None,
        };
        assert!(matches!(
            new.validate(),
            Err(StoreError::InvalidInput {
                field: "principal",
                ..
            })
        ));
        new.principal = "bob".into();
        assert!(new.validate().is_ok());
        new.expires_at_ms = 10;
        assert!(new.validate().is_err());
        new.expires_at_ms = u64::MAX;
        assert!(new.validate().is_err());
    }

    #[test]
    fn due_records_read_expired() {
        let new = NewRecord {
            principal: "a".into(),
            client_id: None,
            request_digest: [0; 32],
            mode: Mode::Form,
            created_at_ms: 0,
            expires_at_ms: 100,
            csrf_token: None,
            origin: None,
        };
        let r = Record::from_new("i".into(), &new);
        assert_eq!(r.clone().seen_at(99).status, Status::Pending);
        assert_eq!(r.seen_at(100).status, Status::Expired);
    }
}
