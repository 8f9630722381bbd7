//! SQLite-only behaviour: durability across reopen, schema guard, spec parsing.

use elicitkit::store::{
    Completion, Mode, NewRecord, Outcome, SqliteStore, Status, Store, StoreError, open_url,
};
use serde_json::json;

fn new_record() -> NewRecord {
    NewRecord {
        principal: "alice".into(),
        client_id: None,
        request_digest: [9; 32],
        mode: Mode::Url,
        created_at_ms: 1_000,
        expires_at_ms: 61_000,
        csrf_token: Some("csrf".into()),
        origin: None,
    }
}

#[test]
fn survives_restart_and_completes_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("restart.db");
    let id = {
        let s = SqliteStore::open(&path).expect("open");
        assert!(s.side_effect_once("state-nonce-1").expect("claim"));
        s.create(&new_record()).expect("create").id
    };

    let s = SqliteStore::open(&path).expect("reopen");
    let rec = s.get(&id, 2_000).expect("get").expect("record survived");
    assert_eq!(
        (rec.status, rec.principal.as_str(), rec.request_digest),
        (Status::Pending, "alice", Some([9; 32]))
    );
    assert!(rec.csrf_matches("csrf"));
    assert!(
        !s.side_effect_once("state-nonce-1").expect("claim"),
        "claims survive restart"
    );
    let done = s
        .complete(
            &id,
            "alice",
            Outcome::Completed(json!({"key": "sk-…9f2c"})),
            2_000,
        )
        .expect("complete");
    assert!(done.is_applied());
    drop(s);

    let s = SqliteStore::open(&path).expect("reopen again");
    let r = s
        .complete(
            &id,
            "alice",
            Outcome::Completed(json!({"key": "other"})),
            3_000,
        )
        .expect("duplicate");
    match r {
        Completion::AlreadyDone(rec) => {
            assert_eq!(rec.result, Some(json!({"key": "sk-…9f2c"})));
            assert_eq!(rec.version, 1);
        }
        other => panic!("expected AlreadyDone, got {other:?}"),
    }
    let audit = s.audit(&id).expect("audit");
    let steps: Vec<_> = audit.iter().map(|e| (e.from, e.to, e.version)).collect();
    assert_eq!(
        steps,
        vec![
            (None, Status::Pending, 0),
            (Some(Status::Pending), Status::Completed, 1)
        ]
    );
}

#[test]
fn several_handles_on_one_file_still_apply_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("shared.db");
    let handles: Vec<SqliteStore> = (0..4)
        .map(|_| SqliteStore::open(&path).expect("open"))
        .collect();
    for round in 0..20u64 {
        let id = handles[0].create(&new_record()).expect("create").id;
        let barrier = std::sync::Barrier::new(handles.len());
        let results: Vec<_> = std::thread::scope(|s| {
            let joins: Vec<_> = handles
                .iter()
                .map(|h| {
                    let (id, barrier) = (&id, &barrier);
                    s.spawn(move || {
                        barrier.wait();
                        h.complete(id, "alice", Outcome::Declined, 2_000 + round)
                    })
                })
                .collect();
            joins
                .into_iter()
                .map(|j| j.join().expect("thread"))
                .collect()
        });
        let applied = results
            .iter()
            .filter(|r| matches!(r, Ok(Completion::Applied(_))))
            .count();
        let dup = results
            .iter()
            .filter(|r| matches!(r, Ok(Completion::AlreadyDone(_))))
            .count();
        assert_eq!((applied, dup), (1, 3), "round {round}: {results:?}");
        assert_eq!(handles[1].audit(&id).expect("audit").len(), 2);
    }
}

#[test]
fn refuses_newer_schema_and_corrupt_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("future.db");
    {
        let conn = rusqlite::Connection::open(&path).expect("raw open");
        conn.pragma_update(None, "user_version", 99)
            .expect("pragma");
    }
    assert!(matches!(
        SqliteStore::open(&path),
        Err(StoreError::UnsupportedSchema { found: 99, .. })
    ));

    let path = dir.path().join("corrupt.db");
    let id = SqliteStore::open(&path)
        .expect("open")
        .create(&new_record())
        .expect("create")
        .id;
    {
        let conn = rusqlite::Connection::open(&path).expect("raw open");
        conn.execute(
            "UPDATE elicitations SET result = 'not json' WHERE id = ?1",
            [&id],
        )
        .expect("tamper");
    }
    let s = SqliteStore::open(&path).expect("reopen");
    assert!(matches!(s.get(&id, 0), Err(StoreError::Corrupt { .. })));
}

#[test]
fn open_url_sqlite_is_durable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = format!("sqlite:{}", dir.path().join("u.db").display());
    let id = open_url(&spec)
        .expect("open")
        .create(&new_record())
        .expect("create")
        .id;
    let s = open_url(&spec).expect("reopen");
    assert!(s.get(&id, 0).expect("get").is_some());
    assert!(matches!(
        open_url("postgres://x"),
        Err(StoreError::BadSpec { .. })
    ));
}

#[test]
fn a_version_1_file_is_upgraded_in_place_and_keeps_its_claims() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("v1.db");
    {
        let conn = rusqlite::Connection::open(&path).expect("raw open");
        conn.execute_batch(
            "CREATE TABLE claims (key TEXT PRIMARY KEY) STRICT, WITHOUT ROWID;
             INSERT INTO claims (key) VALUES ('done:old-nonce');
             PRAGMA user_version = 1;",
        )
        .expect("v1 schema");
    }
    let s = SqliteStore::open(&path).expect("upgrade");
    assert!(!s.side_effect_once("done:old-nonce").expect("claim"));
    // Old claims are kept forever: no purge forgets them.
    assert_eq!(s.purge(u64::MAX / 2, 0).expect("purge").claims, 0);
    assert!(s.claimed("done:old-nonce").expect("lookup").is_some());
    let id = s.create(&new_record()).expect("create").id;
    assert!(s.get(&id, 2_000).expect("get").is_some());
    drop(s);
    let conn = rusqlite::Connection::open(&path).expect("raw open");
    let v: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .expect("version");
    assert_eq!(v, 2);
}

#[test]
fn a_new_file_hands_free_pages_back_after_a_burst() {
    let dir = tempfile::tempdir_in(if std::path::Path::new("/dev/shm").is_dir() {
        "/dev/shm"
    } else {
        "/tmp"
    })
    .expect("tempdir");
    let path = dir.path().join("burst.db");
    let s = SqliteStore::open(&path).expect("open");
    let pages = |_: &SqliteStore| {
        let conn = rusqlite::Connection::open(&path).expect("raw open");
        let n: i64 = conn
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .expect("pages");
        n
    };
    for i in 0..3_000u64 {
        let mut r = new_record();
        r.created_at_ms = i;
        r.expires_at_ms = i + 10;
        s.create(&r).expect("create");
    }
    let full = pages(&s);
    let p = s.purge(1_000_000, 1_000).expect("purge");
    assert_eq!(p.records, 3_000);
    let after = pages(&s);
    assert!(after * 3 < full, "pages {full} -> {after}");
}
