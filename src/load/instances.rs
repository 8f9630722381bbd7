//! Which instance answered each leg, and what that adds up to.
//!
//! A load run against a balancer (or against several `--target` URLs)
//! names the instance behind every reply: the `elicitkit-instance` response
//! header when the server sets one, else the peer address (`IP:PORT`) of
//! the connection the reply came on. Names are interned once into a small
//! [`InstanceTable`] (at most [`MAX_INSTANCES`]; later ones share the
//! [`OTHER`] bucket), so a leg carries a `u16` and the hot path compares a
//! few bytes under a read lock.
//!
//! [`InstanceBook`] folds measured round trips into per-instance, per-leg
//! histograms and counts, and counts retries that crossed instances: a
//! `tools/call` retry (it carries `inputResponses` and `requestState`)
//! answered by another instance than the call that issued its state (the
//! last `input_required` before it). A 2025-11-25 session's legs are the
//! instance's that answered its `initialize` (a session lives there; a
//! balancer must pin it). Legs with no reply (timeouts, failed connections)
//! are counted as unattributed, so the instances' requests plus the
//! unattributed ones are every measured request.

use super::hlog;
use super::metrics::latency_stats;
use crate::client::{LegResult, RoundTrip};
use crate::report::{InstanceLegSummary, InstanceSummary, InstancesSummary};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::sync::RwLock;
use std::time::Duration;

/// Distinct instance names a run keeps apart.
pub const MAX_INSTANCES: usize = 64;
/// The id of every instance past the first [`MAX_INSTANCES`].
pub const OTHER: u16 = MAX_INSTANCES as u16;
/// The name the [`OTHER`] bucket is reported under.
pub const OTHER_NAME: &str = "(other)";
/// The id of a leg whose instance is not known (no reply, or not tracked).
pub const UNKNOWN: u16 = u16::MAX;

/// Interned instance names: id `i` is the `i`-th distinct name seen.
#[derive(Debug, Default)]
pub struct InstanceTable {
    names: RwLock<Vec<Box<[u8]>>>,
}

impl InstanceTable {
    /// The id of `name`, adding it while there is room ([`OTHER`] after).
    pub fn intern(&self, name: &[u8]) -> u16 {
        if let Ok(names) = self.names.read()
            && let Some(i) = names.iter().position(|n| **n == *name)
        {
            return i as u16;
        }
        let Ok(mut names) = self.names.write() else {
            return OTHER;
        };
        // Another task may have added it between the two locks.
        if let Some(i) = names.iter().position(|n| **n == *name) {
            return i as u16;
        }
        if names.len() >= MAX_INSTANCES {
            return OTHER;
        }
        names.push(name.into());
        (names.len() - 1) as u16
    }

    /// The name of `id` (lossy UTF-8), [`OTHER_NAME`] for [`OTHER`].
    pub fn name(&self, id: u16) -> Option<String> {
        if id == OTHER {
            return Some(OTHER_NAME.to_owned());
        }
        let names = self.names.read().ok()?;
        names
            .get(usize::from(id))
            .map(|n| String::from_utf8_lossy(n).into_owned())
    }
}

/// One leg name on one instance.
struct LegAcc {
    latency: Histogram<u64>,
    errors: u64,
}

/// Per-instance accumulators and the retry counts of a run's measured
/// round trips.
#[derive(Default)]
pub struct InstanceBook {
    /// By instance id (index), each by leg name.
    per: Vec<BTreeMap<String, LegAcc>>,
    unattributed: u64,
    retries: u64,
    cross: u64,
    retries_unattributed: u64,
}

impl std::fmt::Debug for InstanceBook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstanceBook")
            .field("instances", &self.per.len())
            .field("retries", &self.retries)
            .field("cross", &self.cross)
            .finish_non_exhaustive()
    }
}

/// Whether `name` is a `tools/call` leg that retries with a state.
fn is_retry_leg(name: &str) -> bool {
    name.starts_with("tools/call") && name != "tools/call #1"
}

impl InstanceBook {
    /// Folds in one measured round trip: `rt.instances[i]` answered
    /// `rt.legs[i]` (missing entries are [`UNKNOWN`]); `failed` marks a
    /// round trip whose outcome was unexpected, which fails its last leg.
    pub fn add(&mut self, rt: &RoundTrip, failed: bool) {
        let last = rt.legs.len().saturating_sub(1);
        let mut issuer: Option<u16> = None;
        for (i, leg) in rt.legs.iter().enumerate() {
            let id = rt.instances.get(i).copied().unwrap_or(UNKNOWN);
            if leg.name.starts_with("tools/call") {
                if is_retry_leg(&leg.name)
                    && let Some(from) = issuer
                {
                    let known = |x: u16| x != UNKNOWN && x != OTHER;
                    if known(from) && known(id) {
                        self.retries += 1;
                        self.cross += u64::from(from != id);
                    } else {
                        self.retries_unattributed += 1;
                    }
                }
                if leg.result == LegResult::InputRequired {
                    issuer = Some(id);
                }
            }
            if id == UNKNOWN {
                self.unattributed += 1;
                continue;
            }
            let idx = usize::from(id);
            if self.per.len() <= idx {
                self.per.resize_with(idx + 1, BTreeMap::new);
            }
            let legs = &mut self.per[idx];
            let acc = match legs.get_mut(leg.name.as_str()) {
                Some(a) => a,
                None => legs.entry(leg.name.clone()).or_insert_with(|| LegAcc {
                    latency: hlog::new_histogram(),
                    errors: 0,
                }),
            };
            let _ = acc.latency.record(micros(leg.total));
            let reached = !matches!(leg.result, LegResult::Transport(_) | LegResult::Timeout);
            acc.errors += u64::from(!reached || (failed && i == last));
        }
    }

    /// The `instances` section of `summary.json`, names from `table`.
    pub fn summary(&self, table: &InstanceTable) -> InstancesSummary {
        let mut answered_by = Vec::new();
        for (id, legs) in self.per.iter().enumerate() {
            if legs.is_empty() {
                continue;
            }
            let name = table.name(id as u16).unwrap_or_else(|| format!("#{id}"));
            let mut all = hlog::new_histogram();
            let mut errors = 0;
            let mut per_leg = BTreeMap::new();
            for (leg, acc) in legs {
                let _ = all.add(&acc.latency);
                errors += acc.errors;
                per_leg.insert(
                    leg.clone(),
                    InstanceLegSummary {
                        requests: acc.latency.len(),
                        errors: acc.errors,
                        latency: latency_stats(&acc.latency),
                    },
                );
            }
            answered_by.push(InstanceSummary {
                instance: name,
                requests: all.len(),
                errors,
                latency: latency_stats(&all),
                legs: per_leg,
            });
        }
        // Busiest first; equal counts by name.
        answered_by.sort_by(|a, b| {
            b.requests
                .cmp(&a.requests)
                .then_with(|| a.instance.cmp(&b.instance))
        });
        InstancesSummary {
            answered_by,
            unattributed_requests: self.unattributed,
            retries: self.retries,
            cross_instance_retries: self.cross,
            retries_unattributed: self.retries_unattributed,
            targets: Vec::new(),
        }
    }
}

/// A leg's time in microseconds, clamped to 1 µs .. 1 h as every other
/// histogram of a run (`record` resizes the auto-resizing histogram).
fn micros(d: Duration) -> u64 {
    (d.as_micros().min(u128::from(u64::MAX)) as u64).clamp(1, 3_600_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{ErrorClass, Leg, Outcome};

    fn leg(name: &str, result: LegResult, ms: u64) -> Leg {
        Leg {
            name: name.into(),
            status: Some(200),
            to_headers: Duration::from_millis(ms),
            to_first_byte: Duration::from_millis(ms),
            total: Duration::from_millis(ms),
            server_state: None,
            server_app: None,
            result,
        }
    }

    /// A form round trip: call, retry; answered by `a` then `b`.
    fn two_legs(a: u16, b: u16) -> RoundTrip {
        let mut rt = RoundTrip::new("form");
        rt.legs = vec![
            leg("tools/call #1", LegResult::InputRequired, 2),
            leg(
                "tools/call #2 retry",
                LegResult::Complete { is_error: false },
                4,
            ),
        ];
        rt.instances = vec![a, b];
        rt.outcome = Outcome::Success;
        rt
    }

    #[test]
    fn names_are_interned_and_capped() {
        let t = InstanceTable::default();
        assert_eq!(t.intern(b"a"), 0);
        assert_eq!(t.intern(b"b"), 1);
        assert_eq!(t.intern(b"a"), 0);
        for i in 2..MAX_INSTANCES {
            assert_eq!(t.intern(format!("n{i}").as_bytes()), i as u16);
        }
        assert_eq!(t.intern(b"one too many"), OTHER);
        assert_eq!(t.intern(b"b"), 1, "known names keep their id when full");
        assert_eq!(t.name(1).as_deref(), Some("b"));
        assert_eq!(t.name(OTHER).as_deref(), Some(OTHER_NAME));
        assert_eq!(t.name(UNKNOWN), None);
    }

    #[test]
    fn counts_sum_and_crossed_retries_are_counted() {
        let t = InstanceTable::default();
        let (a, b) = (t.intern(b"i0"), t.intern(b"i1"));
        let mut book = InstanceBook::default();
        book.add(&two_legs(a, b), false);
        book.add(&two_legs(a, a), false);
        book.add(&two_legs(b, a), false);
        let s = book.summary(&t);
        assert_eq!(s.retries, 3);
        assert_eq!(s.cross_instance_retries, 2);
        assert_eq!(s.unattributed_requests, 0);
        let total: u64 = s.answered_by.iter().map(|i| i.requests).sum();
        assert_eq!(total, 6);
        assert_eq!(s.answered_by[0].instance, "i0", "busiest first");
        assert_eq!(s.answered_by[0].requests, 4);
        let i0 = &s.answered_by[0].legs;
        assert_eq!(i0["tools/call #1"].requests, 2);
        assert_eq!(i0["tools/call #2 retry"].requests, 2);
        assert_eq!(s.answered_by[1].legs["tools/call #1"].requests, 1);
        assert!((s.answered_by[1].legs["tools/call #1"].latency.p50_ms - 2.0).abs() < 0.01);
    }

    #[test]
    fn unknown_legs_are_unattributed_and_their_retries_too() {
        let t = InstanceTable::default();
        let a = t.intern(b"i0");
        let mut book = InstanceBook::default();
        // A retry that timed out: no reply, no instance.
        let mut rt = two_legs(a, UNKNOWN);
        rt.legs[1].result = LegResult::Timeout;
        rt.outcome = Outcome::unexpected(ErrorClass::Timeout, "late");
        book.add(&rt, true);
        // A driver that tracks nothing (legacy sessions).
        let mut legacy = two_legs(a, a);
        legacy.instances.clear();
        book.add(&legacy, false);
        let s = book.summary(&t);
        assert_eq!(s.unattributed_requests, 3);
        assert_eq!(s.retries, 0);
        assert_eq!(s.retries_unattributed, 2);
        assert_eq!(s.answered_by.len(), 1);
        assert_eq!(s.answered_by[0].requests, 1);
        assert_eq!(s.answered_by[0].errors, 0);
    }

    #[test]
    fn an_unexpected_outcome_fails_the_last_leg_on_its_instance() {
        let t = InstanceTable::default();
        let (a, b) = (t.intern(b"i0"), t.intern(b"i1"));
        let mut rt = two_legs(a, b);
        rt.legs[1].result = LegResult::RpcError {
            code: -32602,
            reason: None,
        };
        rt.outcome = Outcome::unexpected(ErrorClass::StateRejected, "refused");
        let mut book = InstanceBook::default();
        book.add(&rt, true);
        let s = book.summary(&t);
        let by = |n: &str| s.answered_by.iter().find(|i| i.instance == n).unwrap();
        assert_eq!(by("i0").errors, 0);
        assert_eq!(by("i1").errors, 1);
        assert_eq!(by("i1").legs["tools/call #2 retry"].errors, 1);
        assert_eq!(s.cross_instance_retries, 1);
    }

    #[test]
    fn a_replay_is_judged_against_the_call_that_issued_its_state() {
        let t = InstanceTable::default();
        let (a, b) = (t.intern(b"i0"), t.intern(b"i1"));
        let mut rt = two_legs(a, b);
        rt.legs.push(leg(
            "tools/call replay",
            LegResult::RpcError {
                code: -32602,
                reason: None,
            },
            1,
        ));
        rt.instances.push(a);
        let mut book = InstanceBook::default();
        book.add(&rt, false);
        let s = book.summary(&t);
        // #2 retry: issued by i0, answered by i1 (crossed); the replay of
        // i0's state answered by i0 (did not).
        assert_eq!((s.retries, s.cross_instance_retries), (2, 1));
    }

    #[test]
    fn the_other_bucket_is_reported_but_not_judged() {
        let t = InstanceTable::default();
        let a = t.intern(b"i0");
        let mut book = InstanceBook::default();
        book.add(&two_legs(a, OTHER), false);
        let s = book.summary(&t);
        assert_eq!(s.retries, 0);
        assert_eq!(s.retries_unattributed, 1);
        assert!(s.answered_by.iter().any(|i| i.instance == OTHER_NAME));
    }
}
