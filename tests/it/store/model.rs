//! The store backends against the reference model: handwritten sequences and
//! random byte strings decoded by `Op::from_bytes`.

use crate::support::cluster::Redis;
use elicitkit::store::Mode;
use elicitkit::store::model::{BackendKind, ModelOutcome, Op, run};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// Empties database 0 of `r` and names it as the backend of one sequence.
fn redis_backend(r: &Redis) -> BackendKind {
    let mut c = r.conn(0);
    redis::cmd("FLUSHDB").query::<()>(&mut c).expect("FLUSHDB");
    BackendKind::Redis(r.url(0))
}

fn sqlite_backend(dir: &tempfile::TempDir) -> BackendKind {
    BackendKind::Sqlite(dir.path().join("model.db"))
}

fn both(ops: &[Op]) {
    run(ops, BackendKind::Memory).expect("memory");
    let dir = tempfile::tempdir().expect("tempdir");
    run(ops, sqlite_backend(&dir)).expect("sqlite");
    let redis = Redis::start();
    run(ops, redis_backend(&redis)).expect("redis");
}

#[test]
fn complete_restart_duplicate() {
    both(&[
        Op::Create {
            principal: 0,
            ttl_ms: 1_000,
            mode: Mode::Url,
        },
        Op::ClaimSideEffect { key: 3 },
        Op::Complete {
            record: 0,
            outcome: ModelOutcome::Completed(7),
        },
        Op::Restart,
        Op::DuplicateComplete {
            record: 0,
            outcome: ModelOutcome::Completed(8),
        },
        Op::ConcurrentComplete {
            record: 0,
            threads: 16,
            outcome: ModelOutcome::Completed(9),
        },
        Op::ClaimSideEffect { key: 3 },
        Op::Restart,
        Op::ClaimSideEffect { key: 3 },
    ]);
}

#[test]
fn expiry_lazy_and_swept_across_restart() {
    both(&[
        Op::Create {
            principal: 1,
            ttl_ms: 50,
            mode: Mode::Form,
        },
        Op::Create {
            principal: 2,
            ttl_ms: 100,
            mode: Mode::Form,
        },
        Op::Create {
            principal: 0,
            ttl_ms: 500,
            mode: Mode::Url,
        },
        Op::Expire {
            advance_ms: 50,
            sweep: false,
        },
        Op::Restart,
        Op::Complete {
            record: 0,
            outcome: ModelOutcome::Declined,
        },
        Op::Expire {
            advance_ms: 50,
            sweep: true,
        },
        Op::ConcurrentComplete {
            record: 1,
            threads: 4,
            outcome: ModelOutcome::Completed(1),
        },
        Op::CompleteByOtherPrincipal { record: 2 },
        Op::Cancel { record: 2 },
        Op::Complete {
            record: 2,
            outcome: ModelOutcome::Completed(2),
        },
        Op::Expire {
            advance_ms: 1_000,
            sweep: true,
        },
    ]);
}

#[test]
fn operations_without_records_are_not_found() {
    both(&[
        Op::Complete {
            record: 3,
            outcome: ModelOutcome::Declined,
        },
        Op::ConcurrentComplete {
            record: 0,
            threads: 3,
            outcome: ModelOutcome::Cancelled,
        },
        Op::CompleteByOtherPrincipal { record: 1 },
        Op::Expire {
            advance_ms: 10,
            sweep: true,
        },
    ]);
}

#[test]
fn decoded_bytes_run_clean() {
    let bytes: Vec<u8> = (0u8..=200).map(|b| b.wrapping_mul(37)).collect();
    let ops = Op::from_bytes(&bytes);
    assert!(!ops.is_empty());
    both(&ops);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn memory_follows_model(bytes in proptest::collection::vec(any::<u8>(), 0..160)) {
        let ops = Op::from_bytes(&bytes);
        if let Err(v) = run(&ops, BackendKind::Memory) {
            return Err(TestCaseError::fail(v.to_string()));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn sqlite_follows_model(bytes in proptest::collection::vec(any::<u8>(), 0..160)) {
        let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let ops = Op::from_bytes(&bytes);
        if let Err(v) = run(&ops, sqlite_backend(&dir)) {
            return Err(TestCaseError::fail(v.to_string()));
        }
    }
}

/// A short run of the model comparison on Redis (a round trip per step),
/// on one private `redis-server` stopped when the test ends.
#[test]
fn redis_follows_model() {
    let redis = Redis::start();
    let mut runner = TestRunner::new(Config::with_cases(32));
    let bytes = proptest::collection::vec(any::<u8>(), 0..160);
    let result = runner.run(&bytes, |bytes| {
        let ops = Op::from_bytes(&bytes);
        run(&ops, redis_backend(&redis)).map_err(|v| TestCaseError::fail(v.to_string()))
    });
    if let Err(e) = result {
        panic!("redis store diverged from the model: {e}");
    }
}
