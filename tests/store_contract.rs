//! Exactly-once and lifecycle contract of every store backend.

use std::sync::{Arc, Barrier};

use elicitkit::store::{
    Completion, MemoryStore, Mode, NewRecord, Outcome, SqliteStore, Status, Store, StoreError,
    mask_secret,
};
use serde_json::json;

fn new_record(principal: &str, created: u64, ttl: u64) -> NewRecord {
    NewRecord {
        principal: principal.into(),
        client_id: Some("client-1".into()),
        request_digest: [7; 32],
        mode: Mode::Url,
        created_at_ms: created,
        expires_at_ms: created + ttl,
        csrf_token: Some("csrf-token-1".into()),
    }
}

/// Both backends, the SQLite one on a temp file kept alive by the guard.
fn backends() -> Vec<(Arc<dyn Store>, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let sqlite = SqliteStore::open(dir.path().join("store.db")).expect("open sqlite");
    vec![
        (Arc::new(MemoryStore::new()), None),
        (Arc::new(sqlite), Some(dir)),
    ]
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
fn hundred_threads_one_applied_memory_and_sqlite() {
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
