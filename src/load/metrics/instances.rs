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
//! [`InstanceBook::add`] attributes each measured leg: it emits the leg
//! into the run's tagged histograms (`inst:`, `insterr:`, `retry:`; see
//! [`super::hlog`]), so the per-interval stream, the `.hlog` and merged
//! logs carry every instance, and keeps per-instance, per-leg histograms
//! for the run's own summary. A retry crossed instances when a `tools/call`
//! retry (it carries `inputResponses` and `requestState`) was answered by
//! another instance than the call that issued its state (the last
//! `input_required` before it). A 2025-11-25 session's legs are the
//! instance's that answered its `initialize` (a session lives there; a
//! balancer must pin it). Legs with no reply (timeouts, failed connections)
//! are unattributed, so the instances' requests plus the unattributed ones
//! are every measured request.
//!
//! [`summarize`] builds the `instances` section from those tagged totals,
//! the same way for a run and for merged logs (which carry no per-leg
//! split).

use super::hlog::{self, INST, INST_ERR, RETRY, RETRY_CROSSED, RETRY_SAME, RETRY_UNJUDGED};
use super::set::{MetricSet, latency_stats, micros};
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

/// One instance seen in the measured legs.
struct Seen {
    name: String,
    legs: BTreeMap<String, LegAcc>,
}

/// Where [`InstanceBook::add`] puts each attributed value: a tag prefix
/// ([`INST`], [`INST_ERR`], [`RETRY`]), the rest of the tag, the value.
pub type Emit<'a> = dyn FnMut(&str, &str, Duration) + 'a;

/// Per-instance, per-leg accumulators of a run's measured round trips.
#[derive(Default)]
pub struct InstanceBook {
    /// By instance id (index).
    per: Vec<Option<Seen>>,
}

impl std::fmt::Debug for InstanceBook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstanceBook")
            .field("instances", &self.per.iter().flatten().count())
            .finish_non_exhaustive()
    }
}

/// Whether `name` is a `tools/call` leg that retries with a state.
fn is_retry_leg(name: &str) -> bool {
    name.starts_with("tools/call") && name != "tools/call #1"
}

impl InstanceBook {
    /// Attributes one measured round trip: `rt.instances[i]` (names in
    /// `table`) answered `rt.legs[i]` (missing entries are [`UNKNOWN`]);
    /// `failed` marks a round trip whose outcome was unexpected, which fails
    /// its last leg. Each attributed leg, failed leg and judged retry goes
    /// to `emit`.
    pub fn add(&mut self, rt: &RoundTrip, failed: bool, table: &InstanceTable, emit: &mut Emit) {
        let last = rt.legs.len().saturating_sub(1);
        let mut issuer: Option<u16> = None;
        for (i, leg) in rt.legs.iter().enumerate() {
            let id = rt.instances.get(i).copied().unwrap_or(UNKNOWN);
            if leg.name.starts_with("tools/call") {
                if is_retry_leg(&leg.name)
                    && let Some(from) = issuer
                {
                    let known = |x: u16| x != UNKNOWN && x != OTHER;
                    let verdict = match (known(from) && known(id), from != id) {
                        (false, _) => RETRY_UNJUDGED,
                        (true, true) => RETRY_CROSSED,
                        (true, false) => RETRY_SAME,
                    };
                    emit(RETRY, verdict, leg.total);
                }
                if leg.result == LegResult::InputRequired {
                    issuer = Some(id);
                }
            }
            if id == UNKNOWN {
                continue;
            }
            let seen = self.seen(id, table);
            let acc = match seen.legs.get_mut(&*leg.name) {
                Some(a) => a,
                None => seen
                    .legs
                    .entry(leg.name.to_string())
                    .or_insert_with(|| LegAcc {
                        latency: hlog::new_histogram(),
                        errors: 0,
                    }),
            };
            let _ = acc.latency.record(micros(leg.total));
            let reached = !matches!(leg.result, LegResult::Transport(_) | LegResult::Timeout);
            let leg_failed = !reached || (failed && i == last);
            acc.errors += u64::from(leg_failed);
            emit(INST, &seen.name, leg.total);
            if leg_failed {
                emit(INST_ERR, &seen.name, leg.total);
            }
        }
    }

    /// The accumulators of instance `id`, named from `table` on first sight.
    fn seen(&mut self, id: u16, table: &InstanceTable) -> &mut Seen {
        let idx = usize::from(id);
        if self.per.len() <= idx {
            self.per.resize_with(idx + 1, || None);
        }
        self.per[idx].get_or_insert_with(|| Seen {
            name: table.name(id).unwrap_or_else(|| format!("#{id}")),
            legs: BTreeMap::new(),
        })
    }

    /// Per leg name, what `instance` answered.
    fn legs_of(&self, instance: &str) -> BTreeMap<String, InstanceLegSummary> {
        let Some(seen) = self.per.iter().flatten().find(|s| s.name == instance) else {
            return BTreeMap::new();
        };
        seen.legs
            .iter()
            .map(|(leg, acc)| {
                let summary = InstanceLegSummary {
                    requests: acc.latency.len(),
                    errors: acc.errors,
                    latency: latency_stats(&acc.latency),
                };
                (leg.clone(), summary)
            })
            .collect()
    }
}

/// The `instances` section of `summary.json` from a run's tagged totals
/// (see [`super::hlog`]): a run's own, with its `book` for the per-leg
/// split, or merged logs' (`book` `None`, no per-leg split).
pub fn summarize(set: &MetricSet, book: Option<&InstanceBook>) -> InstancesSummary {
    let count = |tag: String| set.totals.get(&tag).map_or(0, |h| h.len());
    let mut answered_by: Vec<InstanceSummary> = set
        .with_prefix(INST)
        .map(|(name, h)| InstanceSummary {
            instance: name.to_owned(),
            requests: h.len(),
            errors: count(format!("{INST_ERR}{name}")),
            latency: latency_stats(h),
            legs: book.map(|b| b.legs_of(name)).unwrap_or_default(),
        })
        .collect();
    // Busiest first; equal counts by name.
    answered_by.sort_by(|a, b| {
        b.requests
            .cmp(&a.requests)
            .then_with(|| a.instance.cmp(&b.instance))
    });
    let attributed: u64 = answered_by.iter().map(|i| i.requests).sum();
    let retry = |verdict: &str| count(format!("{RETRY}{verdict}"));
    InstancesSummary {
        answered_by,
        unattributed_requests: set.requests().saturating_sub(attributed),
        retries: retry(RETRY_CROSSED) + retry(RETRY_SAME),
        cross_instance_retries: retry(RETRY_CROSSED),
        retries_unattributed: retry(RETRY_UNJUDGED),
        targets: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{ErrorClass, Leg, Outcome};
    use crate::load::metrics::hlog::LEG;

    fn leg(name: &str, result: LegResult, ms: u64) -> Leg {
        Leg {
            name: name.to_owned().into(),
            status: Some(200),
            to_headers: Duration::from_millis(ms),
            to_first_byte: Duration::from_millis(ms),
            total: Duration::from_millis(ms),
            server_state: None,
            server_app: None,
            connection: Default::default(),
            to_first_event: None,
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

    /// A run's book and tagged totals, kept as the recorder keeps them.
    #[derive(Default)]
    struct Run {
        table: InstanceTable,
        book: InstanceBook,
        totals: BTreeMap<String, Histogram<u64>>,
    }

    impl Run {
        fn add(&mut self, rt: &RoundTrip, failed: bool) {
            let totals = &mut self.totals;
            let mut put = |tag: String, d: Duration| {
                let h = totals.entry(tag).or_insert_with(hlog::new_histogram);
                let _ = h.record(micros(d));
            };
            for l in &rt.legs {
                put(format!("{LEG}{}", l.name), l.total);
            }
            self.book.add(rt, failed, &self.table, &mut |p, n, d| {
                put(format!("{p}{n}"), d)
            });
        }

        /// The totals as the metric set a run or a merge ends with.
        fn set(&self) -> MetricSet {
            MetricSet {
                totals: self.totals.clone(),
                timeline: Vec::new(),
                elapsed: Duration::ZERO,
                samples: Vec::new(),
                status_codes: BTreeMap::new(),
                skip_reasons: BTreeMap::new(),
                window: Default::default(),
                instances: InstancesSummary::default(),
                spells: None,
                pauses: None,
                window_len: Duration::ZERO,
                pace: Default::default(),
            }
        }

        fn summary(&self) -> InstancesSummary {
            summarize(&self.set(), Some(&self.book))
        }
    }

    #[test]
    fn counts_sum_and_crossed_retries_are_counted() {
        let mut run = Run::default();
        let (a, b) = (run.table.intern(b"i0"), run.table.intern(b"i1"));
        run.add(&two_legs(a, b), false);
        run.add(&two_legs(a, a), false);
        run.add(&two_legs(b, a), false);
        let s = run.summary();
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
        assert_eq!(run.totals["retry:crossed"].len(), 2);
        assert_eq!(run.totals["inst:i0"].len(), 4);
    }

    #[test]
    fn the_tagged_totals_alone_give_the_same_figures_without_the_leg_split() {
        let mut run = Run::default();
        let (a, b) = (run.table.intern(b"i0"), run.table.intern(b"10.0.0.2:80"));
        let mut failing = two_legs(b, a);
        failing.outcome = Outcome::unexpected(ErrorClass::StateRejected, "refused");
        run.add(&two_legs(a, b), false);
        run.add(&failing, true);
        let mut unknown = two_legs(a, UNKNOWN);
        unknown.legs[1].result = LegResult::Timeout;
        run.add(&unknown, true);
        let with_book = run.summary();
        let merged = summarize(&run.set(), None);
        assert!(merged.answered_by.iter().all(|i| i.legs.is_empty()));
        let strip = |mut s: InstancesSummary| {
            s.answered_by.iter_mut().for_each(|i| i.legs.clear());
            s
        };
        assert_eq!(strip(with_book), merged);
        assert_eq!(merged.unattributed_requests, 1);
        assert_eq!((merged.retries, merged.cross_instance_retries), (2, 2));
        assert_eq!(merged.retries_unattributed, 1);
        let by = |n: &str| merged.answered_by.iter().find(|i| i.instance == n).unwrap();
        assert_eq!((by("i0").requests, by("i0").errors), (3, 1));
        assert_eq!(
            (by("10.0.0.2:80").requests, by("10.0.0.2:80").errors),
            (2, 0)
        );
    }

    #[test]
    fn unknown_legs_are_unattributed_and_their_retries_too() {
        let mut run = Run::default();
        let a = run.table.intern(b"i0");
        // A retry that timed out: no reply, no instance.
        let mut rt = two_legs(a, UNKNOWN);
        rt.legs[1].result = LegResult::Timeout;
        rt.outcome = Outcome::unexpected(ErrorClass::Timeout, "late");
        run.add(&rt, true);
        // A driver that tracks nothing.
        let mut untracked = two_legs(a, a);
        untracked.instances.clear();
        run.add(&untracked, false);
        let s = run.summary();
        assert_eq!(s.unattributed_requests, 3);
        assert_eq!(s.retries, 0);
        assert_eq!(s.retries_unattributed, 2);
        assert_eq!(s.answered_by.len(), 1);
        assert_eq!(s.answered_by[0].requests, 1);
        assert_eq!(s.answered_by[0].errors, 0);
    }

    #[test]
    fn an_unexpected_outcome_fails_the_last_leg_on_its_instance() {
        let mut run = Run::default();
        let (a, b) = (run.table.intern(b"i0"), run.table.intern(b"i1"));
        let mut rt = two_legs(a, b);
        rt.legs[1].result = LegResult::RpcError {
            code: -32602,
            reason: None,
        };
        rt.outcome = Outcome::unexpected(ErrorClass::StateRejected, "refused");
        run.add(&rt, true);
        let s = run.summary();
        let by = |n: &str| s.answered_by.iter().find(|i| i.instance == n).unwrap();
        assert_eq!(by("i0").errors, 0);
        assert_eq!(by("i1").errors, 1);
        assert_eq!(by("i1").legs["tools/call #2 retry"].errors, 1);
        assert_eq!(s.cross_instance_retries, 1);
    }

    #[test]
    fn a_replay_is_judged_against_the_call_that_issued_its_state() {
        let mut run = Run::default();
        let (a, b) = (run.table.intern(b"i0"), run.table.intern(b"i1"));
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
        run.add(&rt, false);
        let s = run.summary();
        // #2 retry: issued by i0, answered by i1 (crossed); the replay of
        // i0's state answered by i0 (did not).
        assert_eq!((s.retries, s.cross_instance_retries), (2, 1));
    }

    #[test]
    fn the_other_bucket_is_reported_but_not_judged() {
        let mut run = Run::default();
        let a = run.table.intern(b"i0");
        run.add(&two_legs(a, OTHER), false);
        let s = run.summary();
        assert_eq!(s.retries, 0);
        assert_eq!(s.retries_unattributed, 1);
        assert!(s.answered_by.iter().any(|i| i.instance == OTHER_NAME));
    }
}
