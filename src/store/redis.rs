//! Redis backend: records, audit log and claims shared by every instance
//! that opens the same database, so a retry may land on any of them.
//!
//! Every operation that checks and writes is one Lua script (see
//! [`super::redis_lua`]), run with EVALSHA: the compare-and-set of
//! [`Store::complete`] and the `SET NX` of [`Store::claim`] are atomic on
//! the Redis server, so exactly-once holds across processes and machines.
//!
//! Forgetting follows the same contract as memory and SQLite, on the
//! caller's clock: time-ordered sets index record expiry, audit writes and
//! claim lifetimes, and [`Store::purge`] deletes what is due in batches of
//! [`PURGE_BATCH`] and counts what it deleted. Redis key TTLs are not used:
//! they run on the Redis server's clock, not the one the contract takes,
//! and what they dropped no purge could count.
//!
//! Connections: the trait is synchronous and the server calls it on the
//! blocking pool, so this backend uses redis's blocking connections, kept
//! in a small pool (taken per call, returned after; a connection that saw
//! an I/O error is dropped). Connecting and every command are bounded by
//! [`IO_TIMEOUT`]; an unreachable Redis is [`StoreError::Unavailable`].
//! Counters are this process's, like the other backends'.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ::redis::{Connection, RedisError, Script};
use serde_json::Value;

use super::claim::check_key;
use super::counters::{Backend, Counted};
use super::record::settle_against;
use super::redis_lua;
use super::retention::cutoff;
use super::{
    AuditEntry, Claim, Completion, NewRecord, Outcome, Purged, Record, Status, StoreError, Taken,
    is_plausible_id, new_id,
};

/// Prefix of every key this backend writes.
pub const KEY_PREFIX: &str = "elicitkit:";

/// Items one purge or sweep script handles before the next round trip.
pub const PURGE_BATCH: usize = 1_000;

/// Most time to connect, and to send or await one command.
pub const IO_TIMEOUT: Duration = Duration::from_secs(3);

/// Idle connections kept for reuse.
const POOL_MAX: usize = 32;

struct Scripts {
    create: Script,
    complete: Script,
    expire_due: Script,
    purge: Script,
    claim: Script,
}

/// Redis backend; see the module docs.
pub type RedisStore = Counted<RedisBackend>;

/// The uncounted Redis backend behind [`RedisStore`].
pub struct RedisBackend {
    client: ::redis::Client,
    pool: Mutex<Vec<Connection>>,
    scripts: Scripts,
    /// Round trips so far ([`super::Counters::backend_calls`]).
    calls: AtomicU64,
    /// The data set's epoch as last seen (read at open, renewed when a
    /// claim finds another).
    epoch: AtomicU64,
}

impl std::fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBackend").finish_non_exhaustive()
    }
}

fn unavailable(e: &RedisError) -> bool {
    e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_unrecoverable_error()
}

fn map_err(e: RedisError) -> StoreError {
    if unavailable(&e) {
        StoreError::Unavailable(format!("redis: {e}"))
    } else {
        StoreError::Backend(format!("redis: {e}"))
    }
}

fn corrupt(id: &str, reason: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        id: id.to_owned(),
        reason: reason.into(),
    }
}

fn unhex32(id: &str, s: &str) -> Result<[u8; 32], StoreError> {
    crate::hex::decode32(s).ok_or_else(|| corrupt(id, "request digest is not 64 hex digits"))
}

fn parse_epoch(s: &str) -> Result<u64, StoreError> {
    s.parse()
        .map_err(|_| corrupt("epoch", format!("{s:?} is not a number")))
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::InvalidInput {
        field: "outcome",
        reason: e.to_string(),
    })
}

/// The hash fields of a new record (`rec`, made from `new`).
fn fields_of(rec: &Record, new: &NewRecord) -> Vec<(&'static str, String)> {
    let mut f = vec![
        ("p", rec.principal.clone()),
        ("d", crate::hex::encode(&new.request_digest)),
        ("m", rec.mode.as_str().to_owned()),
        ("s", rec.status.as_str().to_owned()),
        ("ca", rec.created_at_ms.to_string()),
        ("ex", rec.expires_at_ms.to_string()),
        ("v", rec.version.to_string()),
    ];
    if let Some(c) = &rec.client_id {
        f.push(("c", c.clone()));
    }
    if let Some(t) = &rec.csrf_token {
        f.push(("t", t.clone()));
    }
    f
}

/// A record from its hash, as `field, value, field, value, …`.
fn record_of(id: &str, flat: &[String]) -> Result<Record, StoreError> {
    let get = |name: &str| {
        flat.chunks_exact(2)
            .find(|kv| kv[0] == name)
            .map(|kv| kv[1].as_str())
    };
    let need = |name: &str| get(name).ok_or_else(|| corrupt(id, format!("missing field {name}")));
    let num = |name: &str| {
        need(name)?
            .parse::<u64>()
            .map_err(|_| corrupt(id, format!("{name} is not a number")))
    };
    let result = match get("r") {
        Some(t) => Some(
            serde_json::from_str(t).map_err(|e| corrupt(id, format!("result is not JSON: {e}")))?,
        ),
        None => None,
    };
    Ok(Record {
        id: id.to_owned(),
        principal: need("p")?.to_owned(),
        client_id: get("c").map(str::to_owned),
        request_digest: Some(unhex32(id, need("d")?)?),
        mode: need("m")?.parse().map_err(|e: String| corrupt(id, e))?,
        status: need("s")?.parse().map_err(|e: String| corrupt(id, e))?,
        created_at_ms: num("ca")?,
        expires_at_ms: num("ex")?,
        version: num("v")?,
        csrf_token: get("t").map(str::to_owned),
        result,
    })
}

/// The audit entry of an expiry at `now_ms` (always version 1: only a
/// pending record, at version 0, can expire).
fn expiry_entry(now_ms: u64) -> AuditEntry {
    AuditEntry {
        at_ms: now_ms,
        from: Some(Status::Pending),
        to: Status::Expired,
        actor_principal: None,
        version: 1,
    }
}

impl RedisStore {
    /// Connects to `url` (`redis://HOST:PORT/DB`) and checks with a PING
    /// that Redis answers.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        RedisBackend::open(url).map(Counted::wrap)
    }

    /// What Redis keeps across a restart, read from its own settings
    /// (`CONFIG GET appendonly appendfsync save`).
    pub fn persistence(&self) -> Persistence {
        let get = |key: &str| {
            self.backend.with_conn(|c| {
                ::redis::cmd("CONFIG")
                    .arg("GET")
                    .arg(key)
                    .query::<Vec<String>>(c)
            })
        };
        let value = |key: &str| get(key).map(|v| v.get(1).cloned().unwrap_or_default());
        match (value("appendonly"), value("appendfsync"), value("save")) {
            (Ok(aof), Ok(fsync), Ok(save)) => Persistence::read(&aof, &fsync, &save),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
                Persistence::Unknown(format!("its settings cannot be read (CONFIG GET: {e})"))
            }
        }
    }

    /// What Redis may evict when it reaches `maxmemory`, read from its own
    /// settings (`CONFIG GET maxmemory-policy`).
    pub fn eviction(&self) -> Eviction {
        let policy = self.backend.with_conn(|c| {
            ::redis::cmd("CONFIG")
                .arg("GET")
                .arg("maxmemory-policy")
                .query::<Vec<String>>(c)
        });
        match policy {
            Ok(v) => Eviction::read(v.get(1).map_or("", String::as_str)),
            Err(e) => Eviction::Unknown(format!(
                "its maxmemory-policy cannot be read (CONFIG GET: {e})"
            )),
        }
    }

    /// Keys of every claim currently held whose key starts with `prefix`
    /// (a bounded SCAN; for tests and operators counting side effects).
    pub fn claim_keys(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        self.backend.claim_keys(prefix)
    }
}

/// What a Redis store keeps across a Redis restart, for exactly-once: a
/// completion record lost in a restart lets every retry of a completed
/// request run again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Persistence {
    /// Append-only file, fsync on every write: nothing is lost.
    Durable,
    /// Append-only file, fsync every second: a crash loses up to the last
    /// second's completions.
    LastSecond,
    /// Nothing, or only periodic snapshots (minutes of completions lost);
    /// says which.
    Volatile(String),
    /// Could not be read (e.g. `CONFIG` disabled by the host); says why.
    Unknown(String),
}

impl Persistence {
    /// Judges Redis's `appendonly`, `appendfsync` and `save` settings.
    pub fn read(appendonly: &str, appendfsync: &str, save: &str) -> Persistence {
        match (appendonly, appendfsync) {
            ("yes", "always") => Persistence::Durable,
            ("yes", "everysec") => Persistence::LastSecond,
            ("yes", other) => Persistence::Volatile(format!(
                "appendonly yes but appendfsync {other}: the OS decides when writes reach disk"
            )),
            _ if save.trim().is_empty() => {
                Persistence::Volatile("appendonly no and no snapshots (save \"\")".into())
            }
            _ => Persistence::Volatile(format!(
                "appendonly no; snapshots only (save \"{save}\"): completions since the last one \
                 are lost in a restart"
            )),
        }
    }
}

/// What Redis may evict when it fills up (`maxmemory`), for exactly-once:
/// an evicted completion record lets every retry of its request run again,
/// and unlike a restart, eviction leaves the store's epoch in place, so
/// nothing notices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Eviction {
    /// `noeviction`: a write past `maxmemory` fails (the server answers
    /// 503); nothing is forgotten.
    Never,
    /// A `volatile-*` policy: only keys with a TTL are evicted, and this
    /// store sets none (module docs), so none of its keys.
    OnlyKeysWithTtl(String),
    /// An `allkeys-*` policy: any key, completion records included.
    AnyKey(String),
    /// Could not be read, or a policy this build does not know; says which.
    Unknown(String),
}

impl Eviction {
    /// Judges Redis's `maxmemory-policy`.
    pub fn read(policy: &str) -> Eviction {
        match policy {
            "noeviction" => Eviction::Never,
            p if p.starts_with("volatile-") => Eviction::OnlyKeysWithTtl(p.to_owned()),
            p if p.starts_with("allkeys-") => Eviction::AnyKey(p.to_owned()),
            p => Eviction::Unknown(format!(
                "maxmemory-policy {p:?} is not one this build knows"
            )),
        }
    }
}

impl RedisBackend {
    fn open(url: &str) -> Result<Self, StoreError> {
        let client = ::redis::Client::open(url).map_err(|e| StoreError::BadSpec {
            spec: url.to_owned(),
            reason: e.to_string(),
        })?;
        let store = RedisBackend {
            client,
            pool: Mutex::new(Vec::new()),
            scripts: Scripts {
                create: Script::new(redis_lua::CREATE),
                complete: Script::new(redis_lua::COMPLETE),
                expire_due: Script::new(redis_lua::EXPIRE_DUE),
                purge: Script::new(redis_lua::PURGE),
                claim: Script::new(redis_lua::CLAIM),
            },
            calls: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
        };
        store.with_conn(|c| ::redis::cmd("PING").query::<String>(c))?;
        let key = format!("{KEY_PREFIX}epoch");
        let epoch: String = store.with_conn(|c| {
            ::redis::cmd("SET")
                .arg(&key)
                .arg(super::new_epoch())
                .arg("NX")
                .query::<()>(c)?;
            ::redis::cmd("GET").arg(&key).query(c)
        })?;
        store.epoch.store(parse_epoch(&epoch)?, Ordering::Relaxed);
        Ok(store)
    }

    fn connect(&self) -> Result<Connection, StoreError> {
        let c = self
            .client
            .get_connection_with_timeout(IO_TIMEOUT)
            .map_err(map_err)?;
        c.set_read_timeout(Some(IO_TIMEOUT)).map_err(map_err)?;
        c.set_write_timeout(Some(IO_TIMEOUT)).map_err(map_err)?;
        Ok(c)
    }

    /// Runs `f` on a pooled connection (a new one when none is idle).
    fn with_conn<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> ::redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        let idle = self.pool.lock().map_err(|_| StoreError::Poisoned)?.pop();
        let mut conn = match idle {
            Some(c) => c,
            None => self.connect()?,
        };
        let r = f(&mut conn);
        self.calls.fetch_add(1, Ordering::Relaxed);
        let keep = match &r {
            Ok(_) => true,
            Err(e) => !unavailable(e),
        };
        if keep
            && let Ok(mut pool) = self.pool.lock()
            && pool.len() < POOL_MAX
        {
            pool.push(conn);
        }
        r.map_err(map_err)
    }

    fn claim_keys(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let pattern = format!("{KEY_PREFIX}claim:{prefix}*");
        let full: Vec<String> = self.with_conn(|c| {
            let mut out = Vec::new();
            let mut cursor: u64 = 0;
            loop {
                let (next, keys): (u64, Vec<String>) = ::redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(&pattern)
                    .arg("COUNT")
                    .arg(1000)
                    .query(c)?;
                out.extend(keys);
                if next == 0 {
                    return Ok(out);
                }
                cursor = next;
            }
        })?;
        let strip = format!("{KEY_PREFIX}claim:");
        Ok(full
            .into_iter()
            .filter_map(|k| k.strip_prefix(&strip).map(str::to_owned))
            .collect())
    }
}

impl Backend for RedisBackend {
    fn create(&self, new: &NewRecord) -> Result<Record, StoreError> {
        new.validate()?;
        let creation = AuditEntry {
            at_ms: new.created_at_ms,
            from: None,
            to: Status::Pending,
            actor_principal: Some(new.principal.clone()),
            version: 0,
        };
        let creation = to_json(&creation)?;
        loop {
            let rec = Record::from_new(new_id(), new);
            let created: i64 = self.with_conn(|c| {
                let mut inv = self.scripts.create.prepare_invoke();
                inv.arg(KEY_PREFIX)
                    .arg(&rec.id)
                    .arg(rec.created_at_ms)
                    .arg(rec.expires_at_ms)
                    .arg(&creation);
                for (k, v) in fields_of(&rec, new) {
                    inv.arg(k).arg(v);
                }
                inv.invoke(c)
            })?;
            if created == 1 {
                return Ok(rec);
            }
        }
    }

    fn get(&self, id: &str, now_ms: u64) -> Result<Option<Record>, StoreError> {
        if !is_plausible_id(id) {
            return Ok(None);
        }
        let key = format!("{KEY_PREFIX}rec:{id}");
        let flat: Vec<String> = self.with_conn(|c| ::redis::cmd("HGETALL").arg(&key).query(c))?;
        if flat.is_empty() {
            return Ok(None);
        }
        Ok(Some(record_of(id, &flat)?.seen_at(now_ms)))
    }

    fn complete(
        &self,
        id: &str,
        principal: &str,
        outcome: Outcome,
        now_ms: u64,
        expiries: &mut u64,
    ) -> Result<Completion, StoreError> {
        if !is_plausible_id(id) {
            return Err(StoreError::NotFound);
        }
        let target = outcome.status();
        let result = match outcome.into_result() {
            Some(v) => to_json(&v)?,
            None => String::new(),
        };
        let applied = AuditEntry {
            at_ms: now_ms,
            from: Some(Status::Pending),
            to: target,
            actor_principal: Some(principal.to_owned()),
            version: 1,
        };
        let (expired, applied) = (to_json(&expiry_entry(now_ms))?, to_json(&applied)?);
        let out: Vec<String> = self.with_conn(|c| {
            self.scripts
                .complete
                .arg(KEY_PREFIX)
                .arg(id)
                .arg(principal)
                .arg(target.as_str())
                .arg(now_ms)
                .arg(&result)
                .arg(&expired)
                .arg(&applied)
                .invoke(c)
        })?;
        let (code, flat) = out
            .split_first()
            .ok_or_else(|| corrupt(id, "empty script reply"))?;
        match code.as_str() {
            "nf" => Err(StoreError::NotFound),
            "wp" => Err(StoreError::WrongPrincipal),
            "expired" => {
                *expiries += 1;
                Err(StoreError::Expired)
            }
            "applied" => Ok(Completion::Applied(record_of(id, flat)?)),
            "settled" => settle_against(record_of(id, flat)?, target),
            other => Err(corrupt(id, format!("unexpected script reply {other:?}"))),
        }
    }

    fn expire_due(&self, now_ms: u64, expiries: &mut u64) -> Result<usize, StoreError> {
        let entry = to_json(&expiry_entry(now_ms))?;
        let mut moved = 0usize;
        loop {
            let (n, scanned): (usize, usize) = self.with_conn(|c| {
                self.scripts
                    .expire_due
                    .arg(KEY_PREFIX)
                    .arg(now_ms)
                    .arg(PURGE_BATCH)
                    .arg(&entry)
                    .invoke(c)
            })?;
            moved += n;
            *expiries += n as u64;
            if scanned < PURGE_BATCH {
                return Ok(moved);
            }
        }
    }

    fn audit(&self, id: &str) -> Result<Vec<AuditEntry>, StoreError> {
        if !is_plausible_id(id) {
            return Ok(Vec::new());
        }
        let key = format!("{KEY_PREFIX}audit:{id}");
        let entries: Vec<String> = self.with_conn(|c| ::redis::cmd("HVALS").arg(&key).query(c))?;
        let mut out = entries
            .iter()
            .map(|t| {
                serde_json::from_str::<AuditEntry>(t)
                    .map_err(|e| corrupt(id, format!("audit entry is not JSON: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        out.sort_by_key(|a| a.version);
        Ok(out)
    }

    fn claim(
        &self,
        key: &str,
        outcome: Option<&Value>,
        keep_until_ms: u64,
    ) -> Result<Claim, StoreError> {
        self.claim_in_epoch(key, outcome, keep_until_ms, 0)
    }

    fn claim_in_epoch(
        &self,
        key: &str,
        outcome: Option<&Value>,
        keep_until_ms: u64,
        epoch: u64,
    ) -> Result<Claim, StoreError> {
        check_key(key)?;
        let stored = match outcome {
            Some(v) => format!("v{}", to_json(v)?),
            None => "n".to_owned(),
        };
        let (code, value): (i64, String) = self.with_conn(|c| {
            self.scripts
                .claim
                .arg(KEY_PREFIX)
                .arg(key)
                .arg(&stored)
                .arg(keep_until_ms)
                .arg(epoch)
                .arg(super::new_epoch())
                .invoke(c)
        })?;
        match code {
            1 => Ok(Claim::Won),
            0 => Ok(Claim::Taken(taken_of(key, &value)?)),
            _ => {
                let now = parse_epoch(&value)?;
                // New requests begin in the data set there is now.
                self.epoch.store(now, Ordering::Relaxed);
                Err(StoreError::EpochChanged { now })
            }
        }
    }

    fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Relaxed)
    }

    fn claimed(&self, key: &str) -> Result<Option<Taken>, StoreError> {
        check_key(key)?;
        let k = format!("{KEY_PREFIX}claim:{key}");
        let v: Option<String> = self.with_conn(|c| ::redis::cmd("GET").arg(&k).query(c))?;
        v.map(|s| taken_of(key, &s)).transpose()
    }

    fn purge(&self, now_ms: u64, retention_ms: u64) -> Result<Purged, StoreError> {
        let cut = cutoff(now_ms, retention_ms).map_or_else(String::new, |c| c.to_string());
        let mut purged = Purged::default();
        loop {
            let (r, a, c, more): (u64, u64, u64, i64) = self.with_conn(|conn| {
                self.scripts
                    .purge
                    .arg(KEY_PREFIX)
                    .arg(&cut)
                    .arg(now_ms)
                    .arg(PURGE_BATCH)
                    .invoke(conn)
            })?;
            purged.records += r;
            purged.audit += a;
            purged.claims += c;
            if more == 0 {
                break;
            }
        }
        Ok(purged)
    }

    fn backend_calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    fn backend_name(&self) -> &'static str {
        "redis"
    }
}

/// A claim's outcome from its stored value (`n`, or `v` + JSON).
fn taken_of(key: &str, stored: &str) -> Result<Taken, StoreError> {
    let outcome = match stored.strip_prefix('v') {
        Some(json) => Some(
            serde_json::from_str(json)
                .map_err(|e| corrupt(key, format!("claim outcome is not JSON: {e}")))?,
        ),
        None if stored == "n" => None,
        None => return Err(corrupt(key, "claim value is neither `n` nor `v`+JSON")),
    };
    Ok(Taken { outcome })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_fsynced_append_only_file_keeps_every_completion() {
        assert_eq!(Persistence::read("yes", "always", ""), Persistence::Durable);
        assert_eq!(
            Persistence::read("yes", "everysec", "3600 1"),
            Persistence::LastSecond
        );
        for (aof, fsync, save, says) in [
            ("yes", "no", "", "appendfsync no"),
            ("no", "everysec", "", "no snapshots"),
            ("no", "everysec", "3600 1 300 100", "snapshots only"),
        ] {
            match Persistence::read(aof, fsync, save) {
                Persistence::Volatile(why) => assert!(why.contains(says), "{why}"),
                other => panic!("{aof}/{fsync}/{save:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn only_a_policy_that_never_evicts_a_key_without_ttl_keeps_every_completion() {
        assert_eq!(Eviction::read("noeviction"), Eviction::Never);
        for p in [
            "volatile-lru",
            "volatile-lfu",
            "volatile-random",
            "volatile-ttl",
        ] {
            assert_eq!(Eviction::read(p), Eviction::OnlyKeysWithTtl(p.into()));
        }
        for p in ["allkeys-lru", "allkeys-lfu", "allkeys-random"] {
            assert_eq!(Eviction::read(p), Eviction::AnyKey(p.into()));
        }
        assert!(matches!(Eviction::read("evict-all"), Eviction::Unknown(_)));
        assert!(matches!(Eviction::read(""), Eviction::Unknown(_)));
    }

    #[test]
    fn digests_round_trip_through_hex() {
        let d: [u8; 32] = std::array::from_fn(|i| (i * 7) as u8);
        assert_eq!(unhex32("x", &crate::hex::encode(&d)).unwrap(), d);
        assert!(unhex32("x", "zz").is_err());
        assert!(unhex32("x", &"g".repeat(64)).is_err());
    }

    #[test]
    fn claim_values_decode_or_are_corrupt() {
        assert_eq!(taken_of("k", "n").unwrap().outcome, None);
        assert_eq!(
            taken_of("k", "v{\"a\":1}").unwrap().outcome,
            Some(serde_json::json!({"a": 1}))
        );
        assert!(taken_of("k", "x").is_err());
        assert!(taken_of("k", "v{").is_err());
    }

    #[test]
    fn an_unreachable_redis_is_unavailable_not_a_panic() {
        // Port 1 on loopback: nothing listens there.
        match RedisStore::open("redis://127.0.0.1:1/0") {
            Err(StoreError::Unavailable(m)) => assert!(m.contains("redis"), "{m}"),
            other => panic!("expected Unavailable, got {other:?}"),
        }
    }
}
