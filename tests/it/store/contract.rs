//! Exactly-once and lifecycle contract of every store backend.

use std::sync::{Arc, Barrier};

use crate::support::cluster::Redis;
use elicitkit::store::{
    Claim, Completion, MemoryStore, Mode, NewRecord, Outcome, RedisStore, SqliteStore, Status,
    Store, StoreError, Taken, mask_secret,
};
use serde_json::{Value, json};

/// What keeps a backend's storage alive, and how to open it again.
enum Guard {
    Memory,
    Sqlite {
        _dir: tempfile::TempDir,
        path: std::path::PathBuf,
    },
    Redis(Redis),
}

impl Guard {
    /// A second handle on the same storage (`None` for memory).
    fn reopen(&self) -> Option<Arc<dyn Store>> {
        match self {
            Guard::Memory => None,
            Guard::Sqlite { path, .. } => Some(Arc::new(SqliteStore::open(path).expect("reopen"))),
            Guard::Redis(r) => Some(Arc::new(RedisStore::open(&r.url(0)).expect("reopen"))),
        }
    }
}

/// Every backend: memory, SQLite on a temp file, Redis on a private
/// `redis-server` (the test fails if it is not installed).
fn all_backends() -> Vec<(Arc<dyn Store>, Guard)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.db");
    let sqlite = SqliteStore::open(&path).expect("open sqlite");
    let redis = Redis::start();
    let rs = RedisStore::open(&redis.url(0)).expect("open redis");
    vec![
        (Arc::new(MemoryStore::new()), Guard::Memory),
        (Arc::new(sqlite), Guard::Sqlite { _dir: dir, path }),
        (Arc::new(rs), Guard::Redis(redis)),
    ]
}

fn new_record(principal: &str, created: u64, ttl: u64) -> NewRecord {
    NewRecord {
        principal: principal.into(),
        client_id: Some("client-1".into()),
        request_digest: [7; 32],
        mode: Mode::Url,
        created_at_ms: created,
        expires_at_ms: created + ttl,
        csrf_token: Some("csrf-token-1".into()),
        origin: None,
    }
}

fn backends() -> Vec<(Arc<dyn Store>, Guard)> {
    all_backends()
}

fn hundred_concurrent_completions(store: Arc<dyn Store>) {
    let rec = store
        .create(&new_record("alice", 1_000, 60_000))
        .expect("create");
    let n = 100;
    let barrier = Arc::new(Barrier::new(n));
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let (store, barrier, id) = (store.clone(), barrier.clone(), rec.id.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let masked = mask_secret(&format!("sk-live-{i:04}-abcdefgh9f2c"));
                let r = store.complete(
                    &id,
                    "alice",
                    Outcome::Completed(json!({ "key": masked })),
                    2_000,
                );
                // The caller's side effect, guarded by the durable claim.
                let ran = match &r {
                    Ok(c) if c.is_applied() => store
                        .side_effect_once(&format!("delete:{id}"))
                        .expect("claim"),
                    _ => false,
                };
                (r, ran)
            })
        })
        .collect();
    let results: Vec<_> = handles
        .into_iter()
        .map(|h| h.join().expect("thread"))
        .collect();
    let applied = results
        .iter()
        .filter(|(r, _)| matches!(r, Ok(Completion::Applied(_))))
        .count();
    let already = results
        .iter()
        .filter(|(r, _)| matches!(r, Ok(Completion::AlreadyDone(_))))
        .count();
    let effects = results.iter().filter(|(_, ran)| *ran).count();
    assert_eq!(
        (applied, already, effects),
        (1, 99, 1),
        "{}",
        store.backend_name()
    );

    // Every duplicate sees the winner's result.
    let winner = results
        .iter()
        .find_map(|(r, _)| match r {
            Ok(Completion::Applied(rec)) => Some(rec.clone()),
            _ => None,
        })
        .expect("winner");
    for (r, _) in &results {
        assert_eq!(r.as_ref().expect("ok").record(), &winner);
    }
    assert_eq!(winner.version, 1);
    assert_eq!(winner.status, Status::Completed);

    let audit = store.audit(&rec.id).expect("audit");
    assert_eq!(audit.len(), 2, "create + exactly one transition");
    assert_eq!(audit[1].from, Some(Status::Pending));
    assert_eq!(audit[1].to, Status::Completed);
    assert_eq!(audit[1].actor_principal.as_deref(), Some("alice"));
    let c = store.counters();
    assert_eq!((c.applied, c.already_done), (1, 99));
    assert!(
        !store
            .side_effect_once(&format!("delete:{}", rec.id))
            .expect("claim")
    );
}

#[test]
fn hundred_threads_one_applied_on_every_backend() {
    for (store, _guard) in backends() {
        hundred_concurrent_completions(store);
    }
}

#[test]
fn expiry_wrong_principal_and_illegal_transitions() {
    for (store, _guard) in backends() {
        let name = store.backend_name();
        let rec = store
            .create(&new_record("alice", 1_000, 500))
            .expect("create");
        assert_eq!(rec.status, Status::Pending);
        assert_eq!(rec.version, 0);
        assert_eq!(rec.request_digest, Some([7; 32]), "{name}");
        let pending = store.get(&rec.id, 1_100).expect("get").expect("some");
        assert_eq!(pending.request_digest, Some([7; 32]), "{name}");

        // Another principal cannot complete, and learns nothing else.
        let r = store.complete(&rec.id, "mallory", Outcome::Declined, 1_100);
        assert!(
            matches!(r, Err(StoreError::WrongPrincipal)),
            "{name}: {r:?}"
        );
        assert_eq!(
            store
                .get(&rec.id, 1_100)
                .expect("get")
                .expect("some")
                .status,
            Status::Pending
        );

        // Unknown and malformed ids.
        for id in ["AAAAAAAAAAAAAAAAAAAAAA", "../../x", ""] {
            let r = store.complete(id, "alice", Outcome::Declined, 1_100);
            assert!(matches!(r, Err(StoreError::NotFound)), "{name}: {r:?}");
        }

        // At the expiry instant the record reads Expired without being written ...
        let seen = store.get(&rec.id, 1_500).expect("get").expect("some");
        assert_eq!((seen.status, seen.version), (Status::Expired, 0));
        // ... and a late completion is refused and persists the expiry.
        let r = store.complete(&rec.id, "alice", Outcome::Completed(json!("x")), 1_500);
        assert!(matches!(r, Err(StoreError::Expired)), "{name}: {r:?}");
        let after = store.get(&rec.id, 0).expect("get").expect("some");
        assert_eq!(
            (after.status, after.version, after.result),
            (Status::Expired, 1, None)
        );
        // A settled record's digest: kept by SQLite and Redis, forgotten by
        // the memory store (nothing reads it once the record settled).
        let kept = (name != "memory").then_some([7; 32]);
        assert_eq!(after.request_digest, kept, "{name}");
        assert_eq!(store.expire_due(10_000).expect("sweep"), 0);

        // Settled records: same outcome is a duplicate, another is illegal.
        let rec2 = store
            .create(&new_record("alice", 2_000, 500))
            .expect("create");
        assert!(
            store
                .cancel(&rec2.id, "alice", 2_100)
                .expect("cancel")
                .is_applied()
        );
        assert!(matches!(
            store.cancel(&rec2.id, "alice", 2_100),
            Ok(Completion::AlreadyDone(_))
        ));
        let r = store.complete(&rec2.id, "alice", Outcome::Declined, 2_100);
        assert!(
            matches!(
                r,
                Err(StoreError::IllegalTransition {
                    from: Status::Cancelled,
                    to: Status::Declined
                })
            ),
            "{name}: {r:?}"
        );

        // The sweep moves only due pending records and logs them without an actor.
        let due = store
            .create(&new_record("bob", 3_000, 100))
            .expect("create");
        let live = store
            .create(&new_record("bob", 3_000, 10_000))
            .expect("create");
        assert_eq!(store.expire_due(3_100).expect("sweep"), 1);
        assert_eq!(
            store
                .get(&live.id, 3_100)
                .expect("get")
                .expect("some")
                .status,
            Status::Pending
        );
        let audit = store.audit(&due.id).expect("audit");
        assert_eq!(audit.len(), 2);
        assert_eq!(
            (
                audit[1].to,
                audit[1].actor_principal.clone(),
                audit[1].at_ms
            ),
            (Status::Expired, None, 3_100)
        );
        assert!(store.audit("nope").expect("audit").is_empty());
    }
}

#[test]
fn create_rejects_bad_input_and_claims_validate_keys() {
    for (store, _guard) in backends() {
        let mut bad = new_record("", 1, 1);
        assert!(matches!(
            store.create(&bad),
            Err(StoreError::InvalidInput { .. })
        ));
        bad.principal = "alice\n".into();
        assert!(matches!(
            store.create(&bad),
            Err(StoreError::InvalidInput { .. })
        ));
        assert!(matches!(
            store.side_effect_once(""),
            Err(StoreError::InvalidInput { .. })
        ));
        assert!(store.side_effect_once("nonce:1").expect("claim"));
        assert!(!store.side_effect_once("nonce:1").expect("claim"));
    }
}

#[test]
fn audit_and_records_hold_no_raw_secret() {
    let secret = "sk-live-THE-RAW-SECRET-9f2c";
    for (store, _guard) in backends() {
        let rec = store
            .create(&new_record("alice", 0, 1_000))
            .expect("create");
        let masked = mask_secret(secret);
        let done = store
            .complete(
                &rec.id,
                "alice",
                Outcome::Completed(json!({ "key": masked })),
                1,
            )
            .expect("complete");
        let dump = format!("{:?} {:?}", done, store.audit(&rec.id).expect("audit"));
        assert!(!dump.contains("RAW-SECRET"), "{dump}");
        assert!(
            !dump.contains("csrf-token-1"),
            "csrf token leaked into Debug: {dump}"
        );
        assert_eq!(done.record().result, Some(json!({ "key": "sk-…9f2c" })));
    }
}

fn reopenable() -> Vec<(Arc<dyn Store>, Guard)> {
    all_backends()
}

/// `n` threads claim `key` at once, each offering `outcome(i)`: one wins,
/// and every loser is handed the winner's outcome, which is returned.
fn claim_at_once(
    store: &Arc<dyn Store>,
    key: &'static str,
    n: usize,
    keep_until_ms: u64,
    outcome: fn(usize) -> Value,
) -> Value {
    let name = store.backend_name();
    let barrier = Arc::new(Barrier::new(n));
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let (store, barrier) = (store.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let mine = outcome(i);
                let got = store.claim(key, Some(&mine), keep_until_ms).expect("claim");
                (mine, got)
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let winners: Vec<_> = results.iter().filter(|(_, c)| c.is_won()).collect();
    assert_eq!(winners.len(), 1, "{name}");
    let recorded = winners[0].0.clone();
    for (_, c) in &results {
        if let Claim::Taken(t) = c {
            assert_eq!(t.outcome.as_ref(), Some(&recorded), "{name}");
        }
    }
    recorded
}

#[test]
fn hundred_concurrent_claims_one_winner_whose_outcome_every_loser_gets() {
    for (store, file) in reopenable() {
        let name = store.backend_name();
        let calls0 = store.counters().backend_calls;
        let recorded = claim_at_once(
            &store,
            "once:deploy:abc",
            100,
            10_000,
            |i| json!({"content": [{"type": "text", "text": format!("run {i}")}]}),
        );
        let c = store.counters();
        assert_eq!((c.claims_won, c.claims_lost), (1, 99), "{name}");
        // One claim is one network round trip to Redis (one script), none in-process.
        let per_claim = if name == "redis" { 1 } else { 0 };
        assert_eq!(c.backend_calls - calls0, per_claim * 100, "{name}");
        assert_eq!(
            store.claimed("once:deploy:abc").expect("lookup"),
            Some(Taken {
                outcome: Some(recorded.clone())
            }),
            "{name}"
        );
        assert_eq!(store.claimed("once:other").expect("lookup"), None);
        // A bare claim records no outcome.
        assert!(store.claim("bare", None, 10_000).expect("claim").is_won());
        assert_eq!(
            store.claim("bare", Some(&json!(1)), 10_000).expect("claim"),
            Claim::Taken(Taken { outcome: None })
        );
        // The outcome is stored (on disk, in Redis) the moment claim() returned.
        if let Some(again) = file.reopen() {
            drop(store);
            let c = again
                .claim("once:deploy:abc", Some(&json!("late")), 10_000)
                .expect("claim");
            assert_eq!(
                c,
                Claim::Taken(Taken {
                    outcome: Some(recorded)
                })
            );
        }
    }
}

/// The completion of a request that has a flow record, claimed as `serve`
/// does (the memory store keeps the claim in the record's entry): one
/// winner among concurrent claims, the record readable as it was through
/// its retention, the claim kept past the record until its own time.
#[test]
fn a_flows_completion_claim_has_one_winner_and_outlives_its_record() {
    for (store, _file) in reopenable() {
        let name = store.backend_name();
        let origin = "origin:0123456789abcdef";
        let new = NewRecord {
            origin: Some(origin.into()),
            ..new_record("alice", 1_000, 500)
        };
        let flow = store.create(&new).unwrap();
        let masked = json!({"masked": mask_secret("sk-live-0123456789abcdef")});
        store
            .complete(&flow.id, "alice", Outcome::Completed(masked.clone()), 1_200)
            .unwrap();
        // The origin's second record is a record of its own.
        let second = store.create(&new).unwrap();
        assert_ne!(second.id, flow.id, "{name}");
        let recorded = Some(claim_at_once(
            &store,
            origin,
            50,
            9_000,
            |i| json!({"content": [{"type": "text", "text": format!("run {i}")}], "isError": false, "structuredContent": {"i": i}}),
        ));
        let got = store.get(&flow.id, 1_300).unwrap().expect("readable");
        assert_eq!(
            (got.status, got.result),
            (Status::Completed, Some(masked)),
            "{name}"
        );
        assert_eq!(store.audit(&flow.id).unwrap().len(), 2, "{name}");
        // Past the record's retention it goes; the claim stays to its time.
        let p = store.purge(2_500, 1_000).unwrap();
        assert_eq!((p.records, p.claims), (2, 0), "{name}: {p:?}");
        assert!(store.get(&flow.id, 2_500).unwrap().is_none(), "{name}");
        assert_eq!(
            store.claimed(origin).unwrap().unwrap().outcome,
            recorded,
            "{name}"
        );
        assert!(
            !store.claim(origin, None, 9_000).unwrap().is_won(),
            "{name}"
        );
        assert_eq!(store.purge(9_001, 1_000).unwrap().claims, 1, "{name}");
        assert_eq!(store.claimed(origin).unwrap(), None, "{name}");
    }
}

#[test]
fn purge_forgets_records_audit_and_claims_past_retention() {
    for (store, _file) in reopenable() {
        let name = store.backend_name();
        // t=1000: a record living 500 ms (expires 1500), settled at 1200.
        let settled = store.create(&new_record("alice", 1_000, 500)).unwrap();
        store
            .complete(
                &settled.id,
                "alice",
                Outcome::Completed(json!({"ok": 1})),
                1_200,
            )
            .unwrap();
        // Never answered; expires at 1500 too.
        let abandoned = store.create(&new_record("bob", 1_000, 500)).unwrap();
        // Still live at 5000.
        let live = store.create(&new_record("carol", 4_000, 10_000)).unwrap();
        assert!(store.claim("short", None, 2_000).unwrap().is_won());
        assert!(
            store
                .claim("long", Some(&json!("o")), 9_000)
                .unwrap()
                .is_won()
        );

        // Retention 1000: at 2499 no record expired 1000 ms ago yet, but
        // every audit entry so far (1000, 1200, 1000) was written that long ago.
        let p = store.purge(2_499, 1_000).unwrap();
        assert_eq!((p.records, p.audit, p.claims), (0, 3, 1), "{name}: {p:?}");
        assert!(store.audit(&settled.id).unwrap().is_empty(), "{name}");
        assert!(store.get(&settled.id, 2_499).unwrap().is_some());
        assert_eq!(store.claimed("short").unwrap(), None, "{name}");
        assert!(store.claimed("long").unwrap().is_some());

        // At 2500 both short-lived records go.
        let p = store.purge(2_500, 1_000).unwrap();
        assert_eq!((p.records, p.audit), (2, 0), "{name}: {p:?}");
        for id in [&settled.id, &abandoned.id] {
            assert!(store.get(id, 2_500).unwrap().is_none(), "{name}");
            assert!(store.audit(id).unwrap().is_empty(), "{name}");
        }
        assert_eq!(
            store.get(&live.id, 2_500).unwrap().unwrap().status,
            Status::Pending
        );
        // A live record keeps its state; only its audit past retention goes.
        store.cancel(&live.id, "carol", 5_000).unwrap();
        let p = store.purge(5_500, 1_000).unwrap();
        assert_eq!((p.records, p.audit), (0, 1), "{name}: {p:?}");
        let audit = store.audit(&live.id).unwrap();
        assert_eq!(audit.len(), 1, "{name}: {audit:?}");
        assert_eq!(audit[0].to, Status::Cancelled);
        // Kept through the instant it names, gone right after.
        assert_eq!(store.purge(9_000, 1_000).unwrap().claims, 0, "{name}");
        assert_eq!(store.purge(9_001, 1_000).unwrap().claims, 1, "{name}");
        // The claim is forgotten: the key can be taken again.
        assert!(store.claim("long", None, 20_000).unwrap().is_won());
        let c = store.counters();
        assert_eq!(
            (c.purged_records, c.purged_audit, c.purged_claims),
            (2, 5, 2),
            "{name}"
        );
        assert!(store.purge(0, 1_000).unwrap().is_empty());
    }
}

/// One window of steady load: `n` flows created, completed and claimed at
/// `t`, then a purge with retention `ret`.
fn steady_window(store: &dyn Store, t: u64, n: usize, ttl: u64, ret: u64) {
    for i in 0..n {
        let now = t + i as u64;
        let rec = store.create(&new_record("alice", now, ttl)).unwrap();
        let outcome =
            json!({"content": [{"type": "text", "text": format!("Deployed {}", rec.id)}]});
        store
            .complete(
                &rec.id,
                "alice",
                Outcome::Completed(json!({"masked": "sk-…9f2c"})),
                now,
            )
            .unwrap();
        store
            .claim(&format!("once:{}", rec.id), Some(&outcome), now + ttl)
            .unwrap();
    }
    store.purge(t + n as u64, ret).unwrap();
}

#[test]
fn sqlite_file_and_memory_stop_growing_after_the_first_retention_window() {
    // Windows of 400 flows, 1 ms apart; TTL 200 ms and retention 400 ms, so
    // about three windows are alive at a time. Sizes taken after each
    // purge from the fourth window on must stay within 10 %.
    // Sizes, not speed, are under test: on tmpfs when there is one, so
    // synchronous=FULL does not cost a disk flush per write.
    let shm = std::path::Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let path = dir.path().join("flat.db");
    let store = SqliteStore::open(&path).unwrap();
    let mut sizes = Vec::new();
    for w in 0..12u64 {
        steady_window(&store, 1_000 + w * 400, 400, 200, 400);
        if w >= 3 {
            sizes.push(SqliteStore::file_bytes(&path));
        }
    }
    let (min, max) = (*sizes.iter().min().unwrap(), *sizes.iter().max().unwrap());
    assert!(
        max as f64 <= min as f64 * 1.10,
        "SQLite file grew: {sizes:?}"
    );
    // The live set is what a memory store keeps: bounded by the windows.
    let mem = MemoryStore::new();
    for w in 0..12u64 {
        steady_window(&mem, 1_000 + w * 400, 400, 200, 400);
    }
    let c = mem.counters();
    let kept_records = c.created - c.purged_records;
    assert!(kept_records <= 3 * 400, "{c:?}");
    assert!(c.claims_won - c.purged_claims <= 2 * 400, "{c:?}");
}

/// The epoch names a data set: every handle on the same storage sees the
/// same one, a claim in another epoch is refused with nothing claimed, and
/// a data set lost underneath (a Redis flushed, as one restarted empty)
/// gets a new epoch, so a request begun before cannot complete again.
#[test]
fn a_claim_from_another_epoch_is_refused_and_a_lost_data_set_gets_a_new_one() {
    for (store, guard) in all_backends() {
        let name = store.backend_name();
        let e = store.epoch();
        assert_ne!(e, 0, "{name}");
        if let Some(again) = guard.reopen() {
            assert_eq!(again.epoch(), e, "{name}: same storage, same epoch");
        }
        let out = json!({"done": 1});
        assert!(
            store
                .claim_in_epoch("epoch:a", Some(&out), 10_000, e)
                .unwrap()
                .is_won()
        );
        let stale = store.claim_in_epoch("epoch:b", Some(&out), 10_000, e ^ 1);
        assert!(
            matches!(stale, Err(StoreError::EpochChanged { now }) if now == e),
            "{name}: {stale:?}"
        );
        assert_eq!(store.claimed("epoch:b").unwrap(), None, "{name}");
        // 0 is "any epoch" (states sealed before epochs existed).
        assert!(
            store
                .claim_in_epoch("epoch:c", None, 10_000, 0)
                .unwrap()
                .is_won()
        );
        if let Guard::Redis(r) = &guard {
            let _: () = redis::cmd("FLUSHDB").query(&mut r.conn(0)).unwrap();
            // The claim of the old epoch finds nothing recorded, and is
            // refused rather than run again.
            let lost = store.claim_in_epoch("epoch:a", Some(&out), 10_000, e);
            let Err(StoreError::EpochChanged { now }) = lost else {
                panic!("redis after a flush: {lost:?}");
            };
            assert_ne!(now, e);
            assert_eq!(store.epoch(), now, "new requests begin in the new one");
            assert_eq!(guard.reopen().unwrap().epoch(), now);
            assert!(
                store
                    .claim_in_epoch("epoch:a", Some(&out), 10_000, now)
                    .unwrap()
                    .is_won()
            );
        }
    }
}
