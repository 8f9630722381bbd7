//! SQLite backend: durable records, audit log and claims in one file.
//!
//! One connection behind a mutex; WAL journal, `synchronous=FULL` (a
//! completion that returned `Applied` survives a power cut), a busy timeout
//! so several processes may share the file. Completion runs in a
//! `BEGIN IMMEDIATE` transaction around the compare-and-set
//! `UPDATE … WHERE id=? AND status='pending' AND principal=? AND
//! expires_at_ms > ?`, so exactly-once holds across processes too.
//!
//! Staying flat: [`Store::purge`] deletes in batches of [`PURGE_BATCH`]
//! rows (the lock is released between batches), and SQLite reuses the
//! freed pages for new rows, so under a steady load the file stops
//! growing once the first retention window has passed. A file created by
//! this version uses `auto_vacuum=INCREMENTAL`: when more than half of it
//! is free after a purge (a burst is over), the free pages go back to the
//! file system. The WAL is checkpointed every 1000 pages and truncated to
//! [`WAL_SIZE_LIMIT`] after a checkpoint.
//!
//! Schema versions: 1 had bare claims; 2 adds `keep_until_ms` and
//! `outcome` to claims and the indexes purging needs (a version-1 file is
//! upgraded in place when opened; its old claims are kept forever).

use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};

use serde_json::Value;

use super::claim::check_key;
use super::counters::{Backend, Counted};
use super::record::settle_against;
use super::retention::cutoff;
use super::{
    AuditEntry, Claim, Completion, Mode, NewRecord, Outcome, Purged, Record, Status, StoreError,
    Taken, is_plausible_id, new_id,
};

/// Schema version written to `PRAGMA user_version`.
const SCHEMA_VERSION: i64 = 2;

/// Rows one purge statement deletes before the lock is released.
pub const PURGE_BATCH: usize = 2_000;

/// Bytes the WAL file is truncated to after a checkpoint.
pub const WAL_SIZE_LIMIT: i64 = 16 * 1024 * 1024;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS elicitations (
    id             TEXT PRIMARY KEY,
    principal      TEXT NOT NULL,
    client_id      TEXT,
    request_digest BLOB NOT NULL CHECK (length(request_digest) = 32),
    mode           TEXT NOT NULL CHECK (mode IN ('form', 'url')),
    status         TEXT NOT NULL
                   CHECK (status IN ('pending', 'completed', 'declined', 'cancelled', 'expired')),
    created_at_ms  INTEGER NOT NULL,
    expires_at_ms  INTEGER NOT NULL,
    version        INTEGER NOT NULL,
    csrf_token     TEXT,
    result         TEXT
) STRICT;
CREATE INDEX IF NOT EXISTS elicitations_pending_expiry
    ON elicitations (expires_at_ms) WHERE status = 'pending';
CREATE TABLE IF NOT EXISTS audit (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    record_id   TEXT NOT NULL,
    at_ms       INTEGER NOT NULL,
    from_status TEXT,
    to_status   TEXT NOT NULL,
    actor       TEXT,
    version     INTEGER NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS audit_by_record ON audit (record_id, seq);
CREATE TABLE IF NOT EXISTS claims (
    key           TEXT PRIMARY KEY,
    keep_until_ms INTEGER NOT NULL,
    outcome       TEXT
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (
    k TEXT PRIMARY KEY,
    v INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
";

/// Indexes of schema version 2 (purging by time).
const INDEXES_V2: &str = "
CREATE INDEX IF NOT EXISTS elicitations_by_expiry ON elicitations (expires_at_ms);
CREATE INDEX IF NOT EXISTS audit_by_time ON audit (at_ms);
CREATE INDEX IF NOT EXISTS claims_by_expiry ON claims (keep_until_ms);
";

/// Upgrades a version-1 file (bare claims) to version 2.
const UPGRADE_V1: &str = "
ALTER TABLE claims ADD COLUMN keep_until_ms INTEGER NOT NULL DEFAULT 9223372036854775807;
ALTER TABLE claims ADD COLUMN outcome TEXT;
";

const SELECT_RECORD: &str = "SELECT id, principal, client_id, request_digest, mode, status, \
     created_at_ms, expires_at_ms, version, csrf_token, result FROM elicitations WHERE id = ?1";

/// SQLite backend; see the module docs.
pub type SqliteStore = Counted<SqliteBackend>;

/// The uncounted SQLite backend behind [`SqliteStore`].
#[derive(Debug)]
pub struct SqliteBackend {
    conn: Mutex<Connection>,
    /// The file's epoch, made with its tables and kept in `meta`.
    epoch: u64,
}

/// Clamps a caller's clock to SQLite's integer range.
fn sql_time(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

fn corrupt(id: &str, reason: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        id: id.to_owned(),
        reason: reason.into(),
    }
}

/// A row as SQLite returns it, before validation.
struct RawRecord {
    id: String,
    principal: String,
    client_id: Option<String>,
    request_digest: Vec<u8>,
    mode: String,
    status: String,
    created_at_ms: i64,
    expires_at_ms: i64,
    version: i64,
    csrf_token: Option<String>,
    result: Option<String>,
}

impl RawRecord {
    fn from_row(row: &Row<'_>) -> rusqlite::Result<RawRecord> {
        Ok(RawRecord {
            id: row.get(0)?,
            principal: row.get(1)?,
            client_id: row.get(2)?,
            request_digest: row.get(3)?,
            mode: row.get(4)?,
            status: row.get(5)?,
            created_at_ms: row.get(6)?,
            expires_at_ms: row.get(7)?,
            version: row.get(8)?,
            csrf_token: row.get(9)?,
            result: row.get(10)?,
        })
    }

    fn into_record(self) -> Result<Record, StoreError> {
        let id = self.id;
        let u = |v: i64, what: &str| {
            u64::try_from(v).map_err(|_| corrupt(&id, format!("negative {what}")))
        };
        let created_at_ms = u(self.created_at_ms, "created_at_ms")?;
        let expires_at_ms = u(self.expires_at_ms, "expires_at_ms")?;
        let version = u(self.version, "version")?;
        let request_digest: [u8; 32] = self
            .request_digest
            .as_slice()
            .try_into()
            .map_err(|_| corrupt(&id, "request_digest is not 32 bytes"))?;
        let mode: Mode = self.mode.parse().map_err(|e: String| corrupt(&id, e))?;
        let status: Status = self.status.parse().map_err(|e: String| corrupt(&id, e))?;
        let result = match self.result {
            Some(text) => Some(
                serde_json::from_str(&text)
                    .map_err(|e| corrupt(&id, format!("result is not JSON: {e}")))?,
            ),
            None => None,
        };
        Ok(Record {
            id,
            principal: self.principal,
            client_id: self.client_id,
            request_digest: Some(request_digest),
            mode,
            status,
            created_at_ms,
            expires_at_ms,
            version,
            csrf_token: self.csrf_token,
            result,
        })
    }
}

fn load(conn: &Connection, id: &str) -> Result<Option<Record>, StoreError> {
    if !is_plausible_id(id) {
        return Ok(None);
    }
    let raw = conn
        .query_row(SELECT_RECORD, [id], RawRecord::from_row)
        .optional()?;
    raw.map(RawRecord::into_record).transpose()
}

fn outcome_text(v: &Value) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::InvalidInput {
        field: "outcome",
        reason: e.to_string(),
    })
}

fn load_claim(conn: &Connection, key: &str) -> Result<Option<Taken>, StoreError> {
    let row: Option<Option<String>> = conn
        .query_row("SELECT outcome FROM claims WHERE key = ?1", [key], |r| {
            r.get(0)
        })
        .optional()?;
    let Some(text) = row else {
        return Ok(None);
    };
    let outcome = match text {
        Some(t) => Some(
            serde_json::from_str(&t)
                .map_err(|e| corrupt(key, format!("claim outcome is not JSON: {e}")))?,
        ),
        None => None,
    };
    Ok(Some(Taken { outcome }))
}

fn insert_audit(tx: &Transaction<'_>, id: &str, entry: &AuditEntry) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO audit (record_id, at_ms, from_status, to_status, actor, version) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            id,
            sql_time(entry.at_ms),
            entry.from.map(Status::as_str),
            entry.to.as_str(),
            entry.actor_principal,
            sql_time(entry.version),
        ],
    )?;
    Ok(())
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`, sets WAL mode,
    /// `synchronous=FULL` and a 5 s busy timeout, and creates (or upgrades)
    /// the schema. Refuses files written by a newer schema version.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        SqliteBackend::open(path.as_ref()).map(Counted::wrap)
    }

    /// Bytes the database file and its WAL take on disk now.
    pub fn file_bytes(path: impl AsRef<Path>) -> u64 {
        let p = path.as_ref();
        let len = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
        let mut wal = p.as_os_str().to_owned();
        wal.push("-wal");
        len(p) + len(Path::new(&wal))
    }
}

impl SqliteBackend {
    fn open(path: &Path) -> Result<Self, StoreError> {
        let mut conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
        if tables == 0 {
            // Only an empty file can still choose its vacuum mode.
            conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
        }
        let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT)?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let found: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if found > SCHEMA_VERSION {
            return Err(StoreError::UnsupportedSchema {
                found,
                supported: SCHEMA_VERSION,
            });
        }
        if found == 1 {
            tx.execute_batch(UPGRADE_V1)?;
        }
        tx.execute_batch(SCHEMA)?;
        tx.execute_batch(INDEXES_V2)?;
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        tx.execute(
            "INSERT OR IGNORE INTO meta (k, v) VALUES ('epoch', ?1)",
            [super::new_epoch() as i64],
        )?;
        let epoch: i64 = tx.query_row("SELECT v FROM meta WHERE k = 'epoch'", [], |r| r.get(0))?;
        tx.commit()?;
        Ok(SqliteBackend {
            conn: Mutex::new(conn),
            epoch: epoch as u64,
        })
    }

    fn lock(&self) -> Result<MutexGuard<'_, Connection>, StoreError> {
        self.conn.lock().map_err(|_| StoreError::Poisoned)
    }

    /// Runs a `DELETE … LIMIT ?2` statement until it deletes fewer than a
    /// batch, releasing the lock between batches; returns the rows deleted.
    fn delete_batched(&self, sql: &str, bound: i64) -> Result<u64, StoreError> {
        let mut total = 0u64;
        loop {
            let n = {
                let conn = self.lock()?;
                let mut stmt = conn.prepare_cached(sql)?;
                stmt.execute(params![bound, PURGE_BATCH as i64])?
            };
            total += n as u64;
            if n < PURGE_BATCH {
                return Ok(total);
            }
        }
    }

    /// With `auto_vacuum=INCREMENTAL`, returns the free pages to the file
    /// system once they are more than half the file; otherwise they stay
    /// for reuse.
    fn hand_back_free_pages(&self) -> Result<(), StoreError> {
        let conn = self.lock()?;
        let mode: i64 = conn.query_row("PRAGMA auto_vacuum", [], |r| r.get(0))?;
        if mode != 2 {
            return Ok(());
        }
        let free: i64 = conn.query_row("PRAGMA freelist_count", [], |r| r.get(0))?;
        let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
        if free * 2 > pages {
            // The pragma frees pages one step at a time: step it to the end.
            let mut stmt = conn.prepare("PRAGMA incremental_vacuum")?;
            let mut rows = stmt.query([])?;
            while rows.next()?.is_some() {}
        }
        Ok(())
    }

    /// Moves one due record to `Expired` inside `tx`; true if it moved.
    fn expire_one(tx: &Transaction<'_>, rec: &Record, now_ms: u64) -> Result<bool, StoreError> {
        let changed = tx.execute(
            "UPDATE elicitations SET status = 'expired', version = version + 1 \
             WHERE id = ?1 AND status = 'pending' AND expires_at_ms <= ?2",
            params![rec.id, sql_time(now_ms)],
        )?;
        if changed == 1 {
            let entry = AuditEntry {
                at_ms: now_ms,
                from: Some(Status::Pending),
                to: Status::Expired,
                actor_principal: None,
                version: rec.version + 1,
            };
            insert_audit(tx, &rec.id, &entry)?;
        }
        Ok(changed == 1)
    }
}

impl Backend for SqliteBackend {
    fn create(&self, new: &NewRecord) -> Result<Record, StoreError> {
        new.validate()?;
        let mut conn = self.lock()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let record = loop {
            let rec = Record::from_new(new_id(), new);
            let inserted = tx.execute(
                "INSERT OR IGNORE INTO elicitations (id, principal, client_id, request_digest, \
                 mode, status, created_at_ms, expires_at_ms, version, csrf_token, result) \
                 VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?7, 0, ?8, NULL)",
                params![
                    rec.id,
                    rec.principal,
                    rec.client_id,
                    &new.request_digest[..],
                    rec.mode.as_str(),
                    sql_time(rec.created_at_ms),
                    sql_time(rec.expires_at_ms),
                    rec.csrf_token,
                ],
            )?;
            if inserted == 1 {
                break rec;
            }
        };
        let entry = AuditEntry {
            at_ms: new.created_at_ms,
            from: None,
            to: Status::Pending,
            actor_principal: Some(new.principal.clone()),
            version: 0,
        };
        insert_audit(&tx, &record.id, &entry)?;
        tx.commit()?;
        Ok(record)
    }

    fn get(&self, id: &str, now_ms: u64) -> Result<Option<Record>, StoreError> {
        let conn = self.lock()?;
        Ok(load(&conn, id)?.map(|r| r.seen_at(now_ms)))
    }

    fn complete(
        &self,
        id: &str,
        principal: &str,
        outcome: Outcome,
        now_ms: u64,
        expiries: &mut u64,
    ) -> Result<Completion, StoreError> {
        let mut conn = self.lock()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let rec = load(&tx, id)?.ok_or(StoreError::NotFound)?;
        if rec.principal != principal {
            return Err(StoreError::WrongPrincipal);
        }
        let target = outcome.status();
        if rec.status != Status::Pending {
            return settle_against(rec, target);
        }
        if rec.is_due(now_ms) {
            if Self::expire_one(&tx, &rec, now_ms)? {
                *expiries += 1;
            }
            tx.commit()?;
            return Err(StoreError::Expired);
        }
        let result = outcome.into_result();
        let result_text = match &result {
            Some(v) => Some(
                serde_json::to_string(v).map_err(|e| StoreError::InvalidInput {
                    field: "outcome",
                    reason: e.to_string(),
                })?,
            ),
            None => None,
        };
        // The compare-and-set: only a live pending record of this principal moves.
        let changed = tx.execute(
            "UPDATE elicitations SET status = ?1, result = ?2, version = version + 1 \
             WHERE id = ?3 AND status = 'pending' AND principal = ?4 AND expires_at_ms > ?5",
            params![
                target.as_str(),
                result_text,
                id,
                principal,
                sql_time(now_ms)
            ],
        )?;
        if changed != 1 {
            // Another writer got in first (possible only across processes);
            // re-read and answer as a duplicate.
            let now = load(&tx, id)?.ok_or(StoreError::NotFound)?;
            return settle_against(now.seen_at(now_ms), target);
        }
        let mut done = rec;
        done.status = target;
        done.result = result;
        done.version += 1;
        let entry = AuditEntry {
            at_ms: now_ms,
            from: Some(Status::Pending),
            to: target,
            actor_principal: Some(principal.to_owned()),
            version: done.version,
        };
        insert_audit(&tx, id, &entry)?;
        tx.commit()?;
        Ok(Completion::Applied(done))
    }

    fn expire_due(&self, now_ms: u64, expiries: &mut u64) -> Result<usize, StoreError> {
        let mut conn = self.lock()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let moved: Vec<(String, i64)> = {
            let mut stmt = tx.prepare(
                "UPDATE elicitations SET status = 'expired', version = version + 1 \
                 WHERE status = 'pending' AND expires_at_ms <= ?1 RETURNING id, version",
            )?;
            let rows = stmt.query_map([sql_time(now_ms)], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect::<Result<_, _>>()?
        };
        for (id, version) in &moved {
            let version = u64::try_from(*version).map_err(|_| corrupt(id, "negative version"))?;
            let entry = AuditEntry {
                at_ms: now_ms,
                from: Some(Status::Pending),
                to: Status::Expired,
                actor_principal: None,
                version,
            };
            insert_audit(&tx, id, &entry)?;
        }
        tx.commit()?;
        *expiries += moved.len() as u64;
        Ok(moved.len())
    }

    fn audit(&self, id: &str) -> Result<Vec<AuditEntry>, StoreError> {
        if !is_plausible_id(id) {
            return Ok(Vec::new());
        }
        let conn = self.lock()?;
        let mut stmt = conn.prepare_cached(
            "SELECT at_ms, from_status, to_status, actor, version FROM audit \
             WHERE record_id = ?1 ORDER BY seq",
        )?;
        type Raw = (i64, Option<String>, String, Option<String>, i64);
        let rows = stmt.query_map([id], |r| {
            Ok::<Raw, _>((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (at, from, to, actor, version) = row?;
            let bad = |what: &str| corrupt(id, format!("audit: {what}"));
            out.push(AuditEntry {
                at_ms: u64::try_from(at).map_err(|_| bad("negative at_ms"))?,
                from: from
                    .map(|s| s.parse::<Status>())
                    .transpose()
                    .map_err(|e| bad(&e))?,
                to: to.parse().map_err(|e: String| bad(&e))?,
                actor_principal: actor,
                version: u64::try_from(version).map_err(|_| bad("negative version"))?,
            });
        }
        Ok(out)
    }

    fn claim(
        &self,
        key: &str,
        outcome: Option<&Value>,
        keep_until_ms: u64,
    ) -> Result<Claim, StoreError> {
        check_key(key)?;
        let text = outcome.map(outcome_text).transpose()?;
        let claim = {
            let mut conn = self.lock()?;
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let inserted = tx.execute(
                "INSERT OR IGNORE INTO claims (key, keep_until_ms, outcome) VALUES (?1, ?2, ?3)",
                params![key, sql_time(keep_until_ms), text],
            )?;
            let claim = if inserted == 1 {
                Claim::Won
            } else {
                Claim::Taken(load_claim(&tx, key)?.ok_or_else(|| corrupt(key, "claim vanished"))?)
            };
            tx.commit()?;
            claim
        };
        Ok(claim)
    }

    fn claimed(&self, key: &str) -> Result<Option<Taken>, StoreError> {
        check_key(key)?;
        let conn = self.lock()?;
        load_claim(&conn, key)
    }

    fn purge(&self, now_ms: u64, retention_ms: u64) -> Result<Purged, StoreError> {
        let mut purged = Purged::default();
        if let Some(cut) = cutoff(now_ms, retention_ms) {
            let cut = sql_time(cut);
            purged.records = self.delete_batched(
                "DELETE FROM elicitations WHERE rowid IN \
                 (SELECT rowid FROM elicitations WHERE expires_at_ms <= ?1 LIMIT ?2)",
                cut,
            )?;
            purged.audit = self.delete_batched(
                "DELETE FROM audit WHERE seq IN \
                 (SELECT seq FROM audit WHERE at_ms <= ?1 LIMIT ?2)",
                cut,
            )?;
        }
        // `keep_until_ms < now`: kept through the instant it names.
        purged.claims = self.delete_batched(
            "DELETE FROM claims WHERE key IN \
             (SELECT key FROM claims WHERE keep_until_ms < ?1 LIMIT ?2)",
            sql_time(now_ms),
        )?;
        if !purged.is_empty() {
            self.hand_back_free_pages()?;
        }
        Ok(purged)
    }

    fn backend_name(&self) -> &'static str {
        "sqlite"
    }

    fn epoch(&self) -> u64 {
        self.epoch
    }
}
