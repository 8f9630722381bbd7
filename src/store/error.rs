//! Typed errors of the pending-elicitation store.

use super::record::Status;

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
    /// The backing service refused a command (not a connection fault).
    #[error("store backend error: {0}")]
    Backend(String),
    /// SQLite reported an error.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
}
