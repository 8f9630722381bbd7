//! What a run measured, beyond Goose's figures: HDR histograms per leg, per
//! scenario (end to end) and per outcome, the target's `Server-Timing`
//! `state` durations, the error taxonomy and the timeline ([`MetricSet`]).
//! A finished [`super::recorder::Recorder`] gives one; merged `.hlog` files
//! give the same ([`MetricSet::from_intervals`]).

use super::hlog::{self, CO, E2E, LEG, LoggedInterval, OUT};
use crate::report::{ErrorGroup, InstancesSummary, LatencyStats};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::time::Duration;

/// Upper edges (ms) of the end-to-end latency bands an interval counts;
/// the last band, from the last edge up, is open.
pub const BAND_EDGES_MS: [f64; 10] = [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0];
/// How many bands: one more than the edges.
pub const BANDS: usize = BAND_EDGES_MS.len() + 1;

/// The band of a latency of `us` microseconds.
pub fn band_of(us: u64) -> usize {
    let ms = us as f64 / 1000.0;
    BAND_EDGES_MS
        .iter()
        .position(|&edge| ms < edge)
        .unwrap_or(BAND_EDGES_MS.len())
}

/// Per-interval figures for the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalStats {
    /// Interval start, seconds since the run started.
    pub start_s: f64,
    /// Interval length in seconds.
    pub len_s: f64,
    /// Round trips finished in it.
    pub round_trips: u64,
    /// Round trips begun in it: the load offered, where `round_trips` is
    /// the load served (0 from merged `.hlog` files, which keep only
    /// finished ones).
    pub started: u64,
    /// Unexpected outcomes among them.
    pub errors: u64,
    /// HTTP requests (legs) finished in it.
    pub requests: u64,
    /// End-to-end p50 (ms), 0 when empty.
    pub p50_ms: f64,
    /// End-to-end p99 (ms), 0 when empty.
    pub p99_ms: f64,
    /// Most round trips in flight at once in the interval.
    pub in_flight_max: u64,
    /// End-to-end latencies counted per band of [`BAND_EDGES_MS`] (the
    /// live view's histogram).
    pub e2e_bands: [u64; BANDS],
    /// Every histogram that got values, by tag: the one per-interval series
    /// the ndjson stream and the report both read.
    pub metrics: BTreeMap<String, LatencyStats>,
}

/// A run's metrics: total histograms per tag (see [`super::hlog`]) and the
/// timeline.
#[derive(Debug, Clone)]
pub struct MetricSet {
    /// Histograms by tag (`leg:…`, `e2e:…`, `out:…:…`, `state:…`, `inst:…`, …).
    pub totals: BTreeMap<String, Histogram<u64>>,
    /// One entry per interval, in order.
    pub timeline: Vec<IntervalStats>,
    /// Wall time the metrics cover.
    pub elapsed: Duration,
    /// Up to 20 distinct unexpected-outcome messages with their counts,
    /// first seen first.
    pub samples: Vec<ErrorGroup>,
    /// HTTP status codes by leg (`none`: no response).
    pub status_codes: BTreeMap<String, BTreeMap<String, u64>>,
    /// The first reason each scenario's attempts were skipped.
    pub skip_reasons: BTreeMap<String, String>,
    /// Where the measured window lay and what was left out of it.
    pub window: MeasuredWindow,
    /// Which instances answered the measured legs (from merged `.hlog`
    /// files: without the per-leg split).
    pub instances: InstancesSummary,
    /// Quiet spells with round trips in flight, in the window (none from
    /// merged `.hlog` files, which do not keep them; see [`super::gaps`]).
    pub spells: Option<Vec<super::gaps::Spell>>,
    /// Spells in which the generator's own heartbeat did not run (the
    /// host paused it), in the window; none from merged `.hlog` files.
    pub pauses: Option<Vec<super::gaps::Spell>>,
    /// How much of the measured window the run covered (the window, or
    /// up to an early stop); `elapsed` ends at the last round trip's end.
    pub window_len: Duration,
    /// What a quiet spell is measured against (the model's pace).
    pub pace: super::gaps::Pace,
}

/// The measured window of a run: when it began, and the round trips
/// left out of the results because they started before it (the launch and
/// the warm-up) or after it (Goose's last second).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MeasuredWindow {
    /// Start of the window, Unix seconds.
    pub from_unix: f64,
    /// Unmeasured time from the first round trip to the window.
    pub lead: Duration,
    /// Round trips (and their requests) started before the window.
    pub before: (u64, u64),
    /// Round trips (and their requests) started after it.
    pub after: (u64, u64),
}

impl MetricSet {
    /// A set that measured nothing.
    pub fn empty() -> MetricSet {
        MetricSet {
            totals: BTreeMap::new(),
            timeline: Vec::new(),
            elapsed: Duration::ZERO,
            samples: Vec::new(),
            status_codes: BTreeMap::new(),
            skip_reasons: BTreeMap::new(),
            window: MeasuredWindow::default(),
            instances: InstancesSummary::default(),
            spells: None,
            pauses: None,
            window_len: Duration::ZERO,
            pace: Default::default(),
        }
    }

    /// Names after a prefix (`leg:`, `e2e:`, …) with their histograms.
    pub fn with_prefix<'a>(
        &'a self,
        prefix: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a Histogram<u64>)> + 'a {
        self.totals
            .iter()
            .filter_map(move |(k, h)| k.strip_prefix(prefix).map(|n| (n, h)))
    }

    /// All round trips' end-to-end times merged.
    pub fn e2e_all(&self) -> Histogram<u64> {
        merged(self.with_prefix(E2E).map(|(_, h)| h))
    }

    /// The end-to-end times thresholds judge: every round trip's, and in
    /// the closed model those backfilled for the round trips stalled users
    /// held back ([`super::cadence`]).
    pub fn e2e_judged(&self) -> Histogram<u64> {
        merged(
            self.with_prefix(E2E)
                .chain(self.with_prefix(CO))
                .map(|(_, h)| h),
        )
    }

    /// One scenario's end-to-end times with its backfilled ones.
    pub fn e2e_judged_of(&self, scenario: &str) -> Histogram<u64> {
        let tag = |p: &str| format!("{p}{scenario}");
        merged(
            [tag(E2E), tag(CO)]
                .iter()
                .filter_map(|k| self.totals.get(k)),
        )
    }

    /// Round trips backfilled for stalled closed-model users.
    pub fn backfilled(&self) -> u64 {
        self.with_prefix(CO).map(|(_, h)| h.len()).sum()
    }

    /// The phase histograms whose (leg, phase) `pred` accepts, merged
    /// (see [`super::phases`]).
    pub fn phases_where(&self, pred: impl Fn(&str, &str) -> bool) -> Histogram<u64> {
        merged(
            self.with_prefix(super::phases::PHASE)
                .filter(|(n, _)| super::phases::split(n).is_some_and(|(l, p)| pred(l, p)))
                .map(|(_, h)| h),
        )
    }

    /// The legs whose name `pred` accepts, merged.
    pub fn legs_where(&self, pred: impl Fn(&str) -> bool) -> Histogram<u64> {
        merged(
            self.with_prefix(LEG)
                .filter(|(n, _)| pred(n))
                .map(|(_, h)| h),
        )
    }

    /// Round trips per (scenario, outcome label).
    pub fn outcome_counts(&self) -> BTreeMap<(String, String), u64> {
        self.with_prefix(OUT)
            .filter_map(|(rest, h)| {
                let (scenario, label) = rest.rsplit_once(':')?;
                Some(((scenario.to_owned(), label.to_owned()), h.len()))
            })
            .collect()
    }

    /// Total round trips.
    pub fn round_trips(&self) -> u64 {
        self.with_prefix(E2E).map(|(_, h)| h.len()).sum()
    }

    /// Total HTTP requests (legs).
    pub fn requests(&self) -> u64 {
        self.with_prefix(LEG).map(|(_, h)| h.len()).sum()
    }

    /// Builds a metric set from intervals read from one or more logs, aligned
    /// on absolute time and bucketed by `interval`.
    /// Its `instances` stay empty: [`super::instances::summarize`] reads them
    /// off the merged `inst:` histograms.
    pub fn from_intervals(intervals: &[LoggedInterval], interval: Duration) -> MetricSet {
        let totals = hlog::totals(intervals);
        let origin = hlog::earliest(intervals).unwrap_or(0.0);
        let width = interval.as_secs_f64().max(0.001);
        let mut buckets: BTreeMap<u64, Bucket> = BTreeMap::new();
        let mut end = 0.0f64;
        for iv in intervals {
            let rel = (iv.start_unix - origin).max(0.0);
            end = end.max(rel + iv.len.as_secs_f64());
            let b = buckets
                .entry((rel / width + 1e-9).floor() as u64)
                .or_default();
            b.add(&iv.name, &iv.hist);
        }
        let timeline = buckets
            .into_iter()
            .map(|(i, b)| b.stats(i as f64 * width, width, 0))
            .collect();
        MetricSet {
            totals,
            timeline,
            elapsed: Duration::from_secs_f64(end),
            samples: Vec::new(),
            status_codes: BTreeMap::new(),
            skip_reasons: BTreeMap::new(),
            window: MeasuredWindow {
                from_unix: origin,
                ..MeasuredWindow::default()
            },
            instances: InstancesSummary::default(),
            spells: None,
            pauses: None,
            window_len: Duration::from_secs_f64(end),
            pace: Default::default(),
        }
    }
}

/// Merges histograms into a fresh one.
pub fn merged<'a>(hs: impl Iterator<Item = &'a Histogram<u64>>) -> Histogram<u64> {
    let mut out = hlog::new_histogram();
    for h in hs {
        let _ = out.add(h);
    }
    out
}

/// Largest value recorded (one hour in microseconds); longer is clamped.
const MAX_US: u64 = 3_600_000_000;

/// A duration in microseconds as every histogram of a run holds it: 1 µs
/// to 1 h, longer clamped.
pub(crate) fn micros(d: Duration) -> u64 {
    (d.as_micros().min(u128::from(MAX_US)) as u64).max(1)
}

/// Records a duration ([`micros`]). `record` resizes the auto-resizing
/// histogram; `saturating_record` would clamp to its current (tiny) range
/// instead.
pub(crate) fn rec(h: &mut Histogram<u64>, d: Duration) {
    let _ = h.record(micros(d));
}

/// One interval's histograms by tag. The tags are our own (leg and
/// scenario names behind fixed prefixes), so a fast hash does: every round
/// trip looks up about five of them.
#[derive(Default)]
pub(super) struct Bucket {
    pub(super) hists: rustc_hash::FxHashMap<String, Histogram<u64>>,
}

impl Bucket {
    pub(super) fn add(&mut self, name: &str, h: &Histogram<u64>) {
        let _ = self
            .hists
            .entry(name.to_owned())
            .or_insert_with(hlog::new_histogram)
            .add(h);
    }

    /// Records `d` under the key made of `parts`; `key` is a reused
    /// buffer, so a known key allocates nothing.
    pub(super) fn record(&mut self, key: &mut String, parts: &[&str], d: Duration) {
        key.clear();
        for p in parts {
            key.push_str(p);
        }
        if let Some(h) = self.hists.get_mut(key.as_str()) {
            rec(h, d);
            return;
        }
        let mut h = hlog::new_histogram();
        rec(&mut h, d);
        self.hists.insert(key.clone(), h);
    }

    pub(super) fn stats(&self, start_s: f64, len_s: f64, in_flight_max: u64) -> IntervalStats {
        let e2e = merged(
            self.hists
                .iter()
                .filter(|(k, _)| k.starts_with(E2E))
                .map(|(_, h)| h),
        );
        let errors = self
            .hists
            .iter()
            .filter_map(|(k, h)| {
                let (_, label) = k.strip_prefix(OUT)?.rsplit_once(':')?;
                is_error_label(label).then(|| h.len())
            })
            .sum();
        let requests = self
            .hists
            .iter()
            .filter(|(k, _)| k.starts_with(LEG))
            .map(|(_, h)| h.len())
            .sum();
        let pct = |p: f64| {
            if e2e.is_empty() {
                0.0
            } else {
                e2e.value_at_percentile(p) as f64 / 1000.0
            }
        };
        IntervalStats {
            start_s,
            len_s,
            round_trips: e2e.len(),
            started: 0,
            errors,
            requests,
            p50_ms: pct(50.0),
            p99_ms: pct(99.0),
            in_flight_max,
            e2e_bands: e2e.iter_recorded().fold([0; BANDS], |mut bands, v| {
                bands[band_of(e2e.lowest_equivalent(v.value_iterated_to()))] += v.count_at_value();
                bands
            }),
            metrics: self
                .hists
                .iter()
                .filter(|(_, h)| !h.is_empty())
                .map(|(k, h)| (k.clone(), latency_stats(h)))
                .collect(),
        }
    }
}

/// Microseconds as milliseconds.
pub(crate) fn us_to_ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Latency statistics of a microsecond histogram.
pub fn latency_stats(h: &Histogram<u64>) -> LatencyStats {
    if h.is_empty() {
        return LatencyStats::default();
    }
    LatencyStats {
        count: h.len(),
        min_ms: us_to_ms(h.min()),
        mean_ms: h.mean() / 1000.0,
        p50_ms: us_to_ms(h.value_at_percentile(50.0)),
        p90_ms: us_to_ms(h.value_at_percentile(90.0)),
        p95_ms: us_to_ms(h.value_at_percentile(95.0)),
        p99_ms: us_to_ms(h.value_at_percentile(99.0)),
        p999_ms: us_to_ms(h.value_at_percentile(99.9)),
        p9999_ms: us_to_ms(h.value_at_percentile(99.99)),
        max_ms: us_to_ms(h.max()),
    }
}

/// True for outcome labels that count as errors (not `success`,
/// `expected_rejection` or `skipped`).
pub fn is_error_label(label: &str) -> bool {
    !matches!(label, "success" | "expected_rejection" | "skipped")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An interval counts its end-to-end latencies per band, each once.
    #[test]
    fn an_interval_counts_its_latencies_per_band() {
        assert_eq!(band_of(999), 0);
        assert_eq!(band_of(1_000), 1);
        assert_eq!(band_of(4_999), 2);
        assert_eq!(band_of(5_000_000), BANDS - 1);
        let mut b = Bucket::default();
        let mut key = String::new();
        for ms in [0.5, 1.5, 1.7, 7.0, 2_000.0] {
            b.record(&mut key, &[E2E, "s"], Duration::from_secs_f64(ms / 1000.0));
        }
        let s = b.stats(0.0, 1.0, 0);
        assert_eq!(s.e2e_bands, [1, 2, 0, 1, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(s.e2e_bands.iter().sum::<u64>(), s.round_trips);
    }
}
