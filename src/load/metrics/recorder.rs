//! The live [`Recorder`] one run's Goose users or open-model tasks share:
//! each finished round trip goes into the current interval's histograms;
//! each interval (default 1 s) is flushed into the `.hlog` buffer, the
//! optional ndjson stream and the run totals, so memory stays flat however
//! long the run. [`Recorder::finish`] gives the run's [`MetricSet`].

use super::gaps::SpellLog;
use super::generator::SlipMeter;
use super::hlog::{self, CO, E2E, GAP, HlogBuffer, HlogError, LEG, OUT, STATE};
use super::instances::{self, InstanceBook, InstanceTable};
use super::set::{Bucket, IntervalStats, MeasuredWindow, MetricSet, is_error_label};
use super::stream::IntervalStream;
use crate::client::{ErrorClass, LegResult, Outcome, RoundTrip};
use crate::report::{ErrorGroup, InstancesSummary, add_error_sample};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// How many error messages a run keeps as samples.
const MAX_SAMPLES: usize = 20;

struct Inner {
    current: Bucket,
    current_index: u64,
    totals: BTreeMap<String, Histogram<u64>>,
    timeline: Vec<IntervalStats>,
    hlog: HlogBuffer,
    hlog_error: Option<String>,
    samples: Vec<ErrorGroup>,
    /// Status code counts by leg (0: no response).
    statuses: BTreeMap<String, BTreeMap<u16, u64>>,
    skip_reasons: BTreeMap<String, String>,
    key: String,
    /// `--out ndjson=FILE` and the phase name its lines carry.
    stream: Option<(IntervalStream, String)>,
    /// Round trips and requests started before and after the window.
    before: (u64, u64),
    after: (u64, u64),
    /// Finish of the last measured round trip, from the window's start.
    last_in_window: Option<Duration>,
    /// Per-instance figures of the measured round trips.
    book: InstanceBook,
    /// Quiet spells with round trips in flight ([`super::gaps`]).
    spells: SpellLog,
    /// Spells in which the generator's heartbeat did not run.
    pauses: SpellLog,
    /// Round trips begun in the window, by interval index, until their
    /// interval closes.
    begun: BTreeMap<u64, u64>,
}

/// Shared, thread-safe collector for one run.
pub struct Recorder {
    started: Instant,
    started_unix: f64,
    interval: Duration,
    inner: Mutex<Inner>,
    requests: AtomicU64,
    round_trips: AtomicU64,
    errors: AtomicU64,
    transport_streak: AtomicU64,
    skipped: AtomicU64,
    last_answer_ns: AtomicU64,
    /// Unmeasured time from the first round trip to the measured window.
    lead: Duration,
    /// The window's length (`Duration::MAX`: until the run ends).
    measured: Duration,
    /// When the first round trip began (ns since `started`, plus 1; 0 =
    /// none yet).
    anchor_ns: AtomicU64,
    in_flight: AtomicU64,
    in_flight_peak: AtomicU64,
    /// When the count in flight last rose from zero (ns since `started`).
    busy_since_ns: AtomicU64,
    /// Instance names seen in replies (see [`super::instances`]).
    instances: InstanceTable,
    /// The open model's schedule slip ([`super::generator`]).
    slip: SlipMeter,
    /// What quiet spells are measured against.
    pace: super::gaps::Pace,
}

/// A round trip in flight; counted down when dropped.
#[derive(Debug)]
pub struct InFlight<'a> {
    recorder: &'a Recorder,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.recorder.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("round_trips", &self.round_trips())
            .finish()
    }
}

impl Recorder {
    /// A recorder starting now, with intervals of `interval`.
    pub fn new(interval: Duration, comments: &[String]) -> Result<Recorder, HlogError> {
        let interval = interval.max(Duration::from_millis(10));
        Ok(Recorder {
            started: Instant::now(),
            started_unix: hlog::unix_seconds(SystemTime::now()),
            interval,
            inner: Mutex::new(Inner {
                current: Bucket::default(),
                current_index: 0,
                totals: BTreeMap::new(),
                timeline: Vec::new(),
                hlog: HlogBuffer::new(SystemTime::now(), comments)?,
                hlog_error: None,
                samples: Vec::new(),
                statuses: BTreeMap::new(),
                skip_reasons: BTreeMap::new(),
                key: String::new(),
                stream: None,
                before: (0, 0),
                after: (0, 0),
                last_in_window: None,
                book: InstanceBook::default(),
                spells: SpellLog::default(),
                pauses: SpellLog::default(),
                begun: BTreeMap::new(),
            }),
            requests: AtomicU64::new(0),
            round_trips: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            transport_streak: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            last_answer_ns: AtomicU64::new(0),
            lead: Duration::ZERO,
            measured: Duration::MAX,
            anchor_ns: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            in_flight_peak: AtomicU64::new(0),
            busy_since_ns: AtomicU64::new(0),
            instances: InstanceTable::default(),
            slip: SlipMeter::default(),
            pace: Default::default(),
        })
    }

    /// Measures only round trips that start `lead` or more after the first
    /// one began, and less than `lead + measured`; the others are counted
    /// apart ([`MeasuredWindow`]). Intervals start at the window.
    pub fn with_window(mut self, lead: Duration, measured: Duration) -> Recorder {
        self.lead = lead;
        self.measured = measured;
        self
    }

    /// Measures quiet spells against `pace` (the open model's schedule;
    /// the closed model's latency by default).
    pub fn with_pace(mut self, pace: super::gaps::Pace) -> Recorder {
        self.pace = pace;
        self
    }

    /// A round trip begins: the first one anchors the window; the count
    /// in flight goes up until the guard drops.
    pub fn begin(&self) -> InFlight<'_> {
        let now = self.started.elapsed().as_nanos() as u64 + 1;
        let _ = self
            .anchor_ns
            .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
        let n = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        if n == 1 {
            self.busy_since_ns.store(now - 1, Ordering::Relaxed);
        }
        self.in_flight_peak.fetch_max(n, Ordering::Relaxed);
        let since = Duration::from_nanos(now - 1).checked_sub(self.window_start());
        if let Some(since) = since.filter(|s| *s < self.measured)
            && let Ok(mut inner) = self.inner.lock()
        {
            *inner.begun.entry(self.interval_index(since)).or_insert(0) += 1;
        }
        InFlight { recorder: self }
    }

    /// Anchors the window now (the schedule's start) unless a round trip
    /// already did: segments of a distributed run line their windows up on
    /// their shared start, not on their own first round trips.
    pub fn anchor_now(&self) {
        let now = self.started.elapsed().as_nanos() as u64 + 1;
        let _ = self
            .anchor_ns
            .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// The interval `since` the window's start falls in.
    fn interval_index(&self, since: Duration) -> u64 {
        // In u64 nanoseconds (584 years): a u128 division is a libcall,
        // and this runs twice per round trip.
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        ns(since) / ns(self.interval).max(1)
    }

    /// The measured window's start, from `started`.
    fn window_start(&self) -> Duration {
        let anchor = self.anchor_ns.load(Ordering::Relaxed);
        Duration::from_nanos(anchor.saturating_sub(1)) + self.lead
    }

    /// Streams every closed interval to `stream`, its lines tagged `phase`.
    pub fn stream_to(&self, stream: IntervalStream, phase: &str) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.stream = Some((stream, phase.to_owned()));
        }
    }

    /// The instance names seen so far: drivers intern each reply's
    /// instance here and fill [`RoundTrip::instances`] with the ids.
    pub fn instances(&self) -> &InstanceTable {
        &self.instances
    }

    /// When the run started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// HTTP requests recorded so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Round trips recorded so far.
    pub fn round_trips(&self) -> u64 {
        self.round_trips.load(Ordering::Relaxed)
    }

    /// Unexpected outcomes so far.
    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    /// Attempts whose policy could not apply (not round trips).
    pub fn skipped(&self) -> u64 {
        self.skipped.load(Ordering::Relaxed)
    }

    /// How long ago the target last answered a round trip (anything but a
    /// timeout or a transport failure), or since the run started: the stall
    /// detector.
    pub fn since_last_answer(&self) -> Duration {
        let last = Duration::from_nanos(self.last_answer_ns.load(Ordering::Relaxed));
        self.started.elapsed().saturating_sub(last)
    }

    /// The open model's arrivals and their slip.
    pub fn slip(&self) -> &SlipMeter {
        &self.slip
    }

    /// The watcher's look at a quiet spell still under way: with round trips
    /// in flight, nothing answered since the later of the last answer and
    /// the moment the count in flight rose from zero ([`super::gaps`]).
    pub fn observe_quiet(&self) {
        if self.in_flight.load(Ordering::Relaxed) == 0 {
            return;
        }
        let from = self
            .last_answer_ns
            .load(Ordering::Relaxed)
            .max(self.busy_since_ns.load(Ordering::Relaxed));
        let now = self.started.elapsed();
        let waiting = self.in_flight.load(Ordering::Relaxed);
        if let Ok(mut inner) = self.inner.lock() {
            inner.spells.note_waiting(
                Duration::from_nanos(from),
                now,
                u32::try_from(waiting).unwrap_or(u32::MAX),
            );
        }
    }

    /// Notes that the generator's heartbeat, due `late` ago, only ran now:
    /// the host did not run this process meanwhile ([`super::gaps::frozen`]
    /// leaves such spells out of the target's frozen time).
    pub fn note_pause(&self, late: Duration) {
        let now = self.started.elapsed();
        if let Ok(mut inner) = self.inner.lock() {
            inner.pauses.note(now.saturating_sub(late), now);
        }
    }

    /// Consecutive round trips that ended in a transport failure (reset by
    /// any round trip that got a response): the dead-target detector.
    pub fn transport_streak(&self) -> u64 {
        self.transport_streak.load(Ordering::Relaxed)
    }

    /// Reserves `n` requests against a cap; false when the cap is reached.
    pub fn try_reserve(&self, n: u64, cap: u64) -> bool {
        self.requests
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |cur| {
                (cur < cap).then_some(cur + n)
            })
            .is_ok()
    }

    /// Records a finished round trip. `e2e` is its end-to-end time (from the
    /// intended start in the open model); `reserved` is how many requests
    /// were already counted via [`Recorder::try_reserve`].
    pub fn record(&self, scenario: &str, rt: &RoundTrip, e2e: Duration, reserved: u64) {
        self.record_paced(scenario, rt, e2e, reserved, None);
    }

    /// [`Recorder::record`] for a closed-model round trip that stalled
    /// against its user's `pacing` ([`super::cadence`]): the round trips
    /// the user would have started meanwhile are backfilled under `co:`.
    pub fn record_paced(
        &self,
        scenario: &str,
        rt: &RoundTrip,
        e2e: Duration,
        reserved: u64,
        pacing: Option<Duration>,
    ) {
        let legs = rt.legs.len() as u64;
        if legs > reserved {
            self.requests.fetch_add(legs - reserved, Ordering::Relaxed);
        }
        let label = rt.outcome.label();
        let skipped = matches!(rt.outcome, Outcome::Skipped(_));
        if skipped {
            self.skipped.fetch_add(1, Ordering::Relaxed);
        } else {
            self.round_trips.fetch_add(1, Ordering::Relaxed);
        }
        if is_error_label(label) {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        let all_transport = !rt.legs.is_empty()
            && rt
                .legs
                .iter()
                .all(|l| matches!(l.result, LegResult::Transport(_)));
        if all_transport {
            self.transport_streak.fetch_add(1, Ordering::Relaxed);
        } else {
            self.transport_streak.store(0, Ordering::Relaxed);
        }
        let answered = !matches!(
            rt.outcome.error_class(),
            Some(ErrorClass::Timeout | ErrorClass::Transport)
        );
        let now = self.started.elapsed();
        let last_answer = Duration::from_nanos(if answered {
            self.last_answer_ns
                .fetch_max(now.as_nanos() as u64, Ordering::Relaxed)
        } else {
            self.last_answer_ns.load(Ordering::Relaxed)
        });
        let window = self.window_start();
        // A round trip belongs to the window it started in.
        let began = now.saturating_sub(e2e);
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        // It was in flight, unanswered, since it began or the last answer.
        if !rt.legs.is_empty() {
            inner.spells.note(last_answer.max(began), now);
        }
        // With no lead, the window opens with the first round trip, whose
        // intended start may precede it by a hair: nothing is "before".
        let early = self.lead > Duration::ZERO && began < window;
        if early || began.saturating_sub(window) >= self.measured {
            let side = if early {
                &mut inner.before
            } else {
                &mut inner.after
            };
            side.0 += u64::from(!skipped);
            side.1 += legs;
            return;
        }
        let since = now.saturating_sub(window);
        inner.last_in_window = inner.last_in_window.max(Some(since));
        let index = self.interval_index(since);
        if index > inner.current_index {
            self.rotate(&mut inner, index, None);
        }
        let inner = &mut *inner;
        for leg in &rt.legs {
            let code = leg.status.unwrap_or(0);
            match inner.statuses.get_mut(&*leg.name) {
                Some(m) => *m.entry(code).or_insert(0) += 1,
                None => {
                    inner
                        .statuses
                        .insert(leg.name.to_string(), BTreeMap::from([(code, 1)]));
                }
            }
        }
        let (b, k) = (&mut inner.current, &mut inner.key);
        for leg in &rt.legs {
            b.record(k, &[LEG, &leg.name], leg.total);
            let gap = leg
                .to_first_byte
                .saturating_sub(leg.to_headers)
                .max(leg.total.saturating_sub(leg.to_first_byte));
            b.record(k, &[GAP, &leg.name], gap);
            for (phase, d) in super::phases::of(leg) {
                b.record(k, &[super::phases::PHASE, &leg.name, ".", phase], d);
            }
            // `state;dur=0` means no state was opened on that leg.
            if let Some(s) = leg.server_state.filter(|s| !s.is_zero()) {
                b.record(k, &[STATE, &leg.name], s);
            }
        }
        if !skipped {
            b.record(k, &[E2E, scenario], e2e);
            if let Some(c) = pacing {
                for v in super::cadence::backfill(e2e, c) {
                    b.record(k, &[CO, scenario], v);
                }
            }
        }
        let failed = is_error_label(label);
        inner
            .book
            .add(rt, failed, &self.instances, &mut |prefix, name, d| {
                b.record(k, &[prefix, name], d)
            });
        b.record(k, &[OUT, scenario, ":", label], e2e);
        if let Outcome::Skipped(why) = &rt.outcome
            && !inner.skip_reasons.contains_key(scenario)
        {
            inner
                .skip_reasons
                .insert(scenario.to_owned(), why.to_string());
        }
        if let Outcome::Unexpected { class, message } = &rt.outcome {
            let text = format!("{scenario}: {class}: {message}");
            add_error_sample(&mut inner.samples, &text, MAX_SAMPLES);
        }
    }

    /// Round trips in flight now.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Stats of the last closed interval (for the progress line).
    pub fn last_interval(&self) -> Option<IntervalStats> {
        self.inner.lock().ok()?.timeline.last().cloned()
    }

    /// Closes the current interval. `end` cuts the last, partial interval
    /// short (so its rates are not diluted).
    fn rotate(&self, inner: &mut Inner, next_index: u64, end: Option<Duration>) {
        let bucket = std::mem::take(&mut inner.current);
        let start = self.interval.saturating_mul(inner.current_index as u32);
        let len = end
            .map(|e| {
                e.saturating_sub(start)
                    .clamp(Duration::from_millis(1), self.interval)
            })
            .unwrap_or(self.interval);
        let peak = self
            .in_flight_peak
            .swap(self.in_flight.load(Ordering::Relaxed), Ordering::Relaxed);
        let mut stats = bucket.stats(start.as_secs_f64(), len.as_secs_f64(), peak);
        stats.started = take_begun(&mut inner.begun, inner.current_index);
        let window = self.window_start();
        if let Some((stream, phase)) = &inner.stream {
            let unix = self.started_unix + window.as_secs_f64();
            stream.write_interval(phase, unix, &stats);
        }
        inner.timeline.push(stats);
        // Intervals in which nothing finished are in the timeline too, as
        // zeros (a frozen target shows as a hole, not as a shorter run).
        for i in inner.current_index + 1..next_index {
            let start = self.interval.saturating_mul(i as u32);
            let mut empty = Bucket::default().stats(
                start.as_secs_f64(),
                self.interval.as_secs_f64(),
                self.in_flight.load(Ordering::Relaxed),
            );
            empty.started = take_begun(&mut inner.begun, i);
            if let Some((stream, phase)) = &inner.stream {
                stream.write_interval(phase, self.started_unix + window.as_secs_f64(), &empty);
            }
            inner.timeline.push(empty);
        }
        for (name, h) in &bucket.hists {
            if let Err(e) = inner.hlog.push(name, h, window + start, len)
                && inner.hlog_error.is_none()
            {
                inner.hlog_error = Some(e.to_string());
            }
            let _ = inner
                .totals
                .entry(name.clone())
                .or_insert_with(hlog::new_histogram)
                .add(h);
        }
        inner.current_index = next_index;
    }

    /// Closes the last interval and returns the metrics and the `.hlog` text.
    /// The metrics cover the measured window, up to the last measured round
    /// trip's end when the run stopped early (so shutdown and report
    /// writing do not dilute the rates).
    pub fn finish(&self) -> (MetricSet, Vec<u8>, Option<String>) {
        let Ok(mut inner) = self.inner.lock() else {
            return (
                MetricSet::empty(),
                Vec::new(),
                Some("metrics lock poisoned".into()),
            );
        };
        let (elapsed, _) = self.covered(&inner);
        let next = inner.current_index + 1;
        if !inner.current.hists.is_empty() || inner.timeline.is_empty() {
            self.rotate(&mut inner, next, Some(elapsed));
        }
        let set = self.set_of(&inner, inner.totals.clone());
        (
            set,
            inner.hlog.as_bytes().to_vec(),
            inner.hlog_error.clone(),
        )
    }

    /// The metrics so far, the interval under way included, without
    /// closing it: what an `abort_on_fail` threshold judges mid-run.
    pub fn snapshot(&self) -> MetricSet {
        let Ok(inner) = self.inner.lock() else {
            return MetricSet::empty();
        };
        let mut totals = inner.totals.clone();
        for (name, h) in &inner.current.hists {
            let _ = totals
                .entry(name.clone())
                .or_insert_with(hlog::new_histogram)
                .add(h);
        }
        self.set_of(&inner, totals)
    }

    /// The time the metrics cover (to the last measured round trip's end)
    /// and the part of the window that ran.
    fn covered(&self, inner: &Inner) -> (Duration, Duration) {
        let since_window = self.started.elapsed().saturating_sub(self.window_start());
        let elapsed = inner
            .last_in_window
            .unwrap_or(since_window)
            .min(self.measured);
        (elapsed, since_window.min(self.measured))
    }

    /// The metric set of `inner` with these `totals`.
    fn set_of(&self, inner: &Inner, totals: BTreeMap<String, Histogram<u64>>) -> MetricSet {
        let window = self.window_start();
        let (elapsed, window_len) = self.covered(inner);
        let mut set = MetricSet {
            totals,
            timeline: inner.timeline.clone(),
            elapsed,
            samples: inner.samples.clone(),
            status_codes: inner
                .statuses
                .iter()
                .map(|(leg, m)| {
                    let codes = m
                        .iter()
                        .map(|(c, n)| {
                            let code = if *c == 0 {
                                "none".into()
                            } else {
                                c.to_string()
                            };
                            (code, *n)
                        })
                        .collect();
                    (leg.clone(), codes)
                })
                .collect(),
            skip_reasons: inner.skip_reasons.clone(),
            window: MeasuredWindow {
                from_unix: self.started_unix + window.as_secs_f64(),
                lead: self.lead,
                before: inner.before,
                after: inner.after,
            },
            instances: InstancesSummary::default(),
            spells: Some(inner.spells.window(window, window_len)),
            pauses: Some(inner.pauses.window(window, window_len)),
            window_len,
            pace: self.pace.clone(),
        };
        set.instances = instances::summarize(&set, Some(&inner.book));
        set
    }

    /// How far into the measured window the run is (zero before it).
    pub fn into_window(&self) -> Duration {
        if self.anchor_ns.load(Ordering::Relaxed) == 0 {
            return Duration::ZERO;
        }
        self.started.elapsed().saturating_sub(self.window_start())
    }
}

/// The round trips begun in interval `index`, and any of an earlier one
/// that had already closed when they were counted.
fn take_begun(begun: &mut BTreeMap<u64, u64>, index: u64) -> u64 {
    let mut n = 0;
    while let Some(entry) = begun.first_entry().filter(|e| *e.key() <= index) {
        n += entry.remove();
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{ErrorClass, Leg};
    use crate::load::metrics::set::rec;

    fn leg(name: &str, ms: u64, result: LegResult) -> Leg {
        Leg {
            name: name.to_owned().into(),
            status: Some(200),
            to_headers: Duration::from_millis(ms),
            to_first_byte: Duration::from_millis(ms),
            total: Duration::from_millis(ms),
            server_state: Some(Duration::from_micros(40)),
            server_app: None,
            connection: Default::default(),
            to_first_event: None,
            result,
        }
    }

    fn rt(outcome: Outcome) -> RoundTrip {
        let mut r = RoundTrip::new("x");
        r.legs = vec![
            leg("tools/call #1", 2, LegResult::InputRequired),
            leg(
                "tools/call #2 retry",
                3,
                LegResult::Complete { is_error: false },
            ),
        ];
        r.outcome = outcome;
        r
    }

    #[test]
    fn records_legs_outcomes_and_hlog() {
        let r = Recorder::new(Duration::from_secs(1), &[]).unwrap();
        r.record(
            "form-accept",
            &rt(Outcome::Success),
            Duration::from_millis(5),
            0,
        );
        r.record(
            "form-accept",
            &rt(Outcome::unexpected(ErrorClass::Timeout, "slow")),
            Duration::from_millis(9),
            0,
        );
        r.record(
            "tamper",
            &rt(Outcome::ExpectedRejection {
                code: Some(-32602),
                reason: None,
            }),
            Duration::from_millis(4),
            0,
        );
        assert_eq!((r.round_trips(), r.requests(), r.errors()), (3, 6, 1));
        let (set, log, err) = r.finish();
        assert!(err.is_none());
        assert_eq!(set.round_trips(), 3);
        assert_eq!(set.requests(), 6);
        let counts = set.outcome_counts();
        assert_eq!(counts[&("form-accept".into(), "success".into())], 1);
        assert_eq!(counts[&("form-accept".into(), "timeout".into())], 1);
        assert_eq!(counts[&("tamper".into(), "expected_rejection".into())], 1);
        assert_eq!(set.legs_where(|n| n.ends_with("retry")).len(), 3);
        assert_eq!(set.timeline.iter().map(|t| t.errors).sum::<u64>(), 1);
        assert_eq!(set.samples.len(), 1);
        assert_eq!(set.status_codes["tools/call #1"]["200"], 3);
        // Each interval carries every histogram's stats (the stream's and
        // the report's one series).
        let first = &set.timeline[0].metrics;
        assert_eq!(first["leg:tools/call #1"].count, 3);
        assert_eq!(first["out:form-accept:timeout"].count, 1);
        // The log alone rebuilds the same totals.
        let ivs = hlog::read_bytes(&log, "run").unwrap();
        let mut again = MetricSet::from_intervals(&ivs, Duration::from_secs(1));
        again.instances = instances::summarize(&again, None);
        assert_eq!(again.round_trips(), 3);
        assert_eq!(again.outcome_counts(), counts);
        assert_eq!(again.e2e_all().max(), set.e2e_all().max());
    }

    #[test]
    fn the_timeline_counts_round_trips_where_they_begin_and_where_they_end() {
        let r = Recorder::new(Duration::from_millis(200), &[]).unwrap();
        let (a, b) = (r.begin(), r.begin());
        std::thread::sleep(Duration::from_millis(450));
        let c = r.begin();
        r.record("a", &rt(Outcome::Success), Duration::from_millis(450), 0);
        r.record("a", &rt(Outcome::Success), Duration::from_millis(450), 0);
        r.record("a", &rt(Outcome::Success), Duration::ZERO, 0);
        drop((a, b, c));
        let (set, _, _) = r.finish();
        let started: Vec<u64> = set.timeline.iter().map(|i| i.started).collect();
        let finished: Vec<u64> = set.timeline.iter().map(|i| i.round_trips).collect();
        assert_eq!(started.iter().sum::<u64>(), 3, "{started:?}");
        assert_eq!(started[0], 2, "{started:?}");
        assert_eq!(finished[0], 0, "{finished:?}");
        assert_eq!(finished.iter().sum::<u64>(), 3, "{finished:?}");
    }

    #[test]
    fn round_trips_outside_the_window_are_counted_apart() {
        // An hour's lead: every round trip now started before the window.
        let r = Recorder::new(Duration::from_secs(1), &[])
            .unwrap()
            .with_window(Duration::from_secs(3600), Duration::from_secs(10));
        drop(r.begin());
        r.record("a", &rt(Outcome::Success), Duration::from_millis(1), 0);
        let (set, _, _) = r.finish();
        assert_eq!(set.round_trips(), 0, "the warm-up is not measured");
        assert_eq!(set.window.before, (1, 2));
        assert_eq!(set.elapsed, Duration::ZERO);
        // A window of no length: everything started after it.
        let r = Recorder::new(Duration::from_secs(1), &[])
            .unwrap()
            .with_window(Duration::ZERO, Duration::ZERO);
        let guard = r.begin();
        r.record("a", &rt(Outcome::Success), Duration::ZERO, 0);
        drop(guard);
        let (set, _, _) = r.finish();
        assert_eq!((set.round_trips(), set.window.after), (0, (1, 2)));
        // No window: everything is measured, from the first round trip on.
        let r = Recorder::new(Duration::from_secs(1), &[]).unwrap();
        let _g = r.begin();
        r.record("a", &rt(Outcome::Success), Duration::from_millis(1), 0);
        let (set, _, _) = r.finish();
        assert_eq!((set.round_trips(), set.window.before), (1, (0, 0)));
    }

    #[test]
    fn long_values_are_kept_not_clamped() {
        let mut h = hlog::new_histogram();
        rec(&mut h, Duration::from_millis(250));
        rec(&mut h, Duration::from_micros(3));
        assert!(h.max() >= 249_000, "{}", h.max());
        assert_eq!(h.min(), 3);
    }

    #[test]
    fn the_request_cap_holds() {
        let r = Recorder::new(Duration::from_secs(1), &[]).unwrap();
        assert!(r.try_reserve(1, 2));
        assert!(r.try_reserve(1, 2));
        assert!(!r.try_reserve(1, 2));
        assert_eq!(r.requests(), 2);
    }

    #[test]
    fn a_streak_of_transport_failures_is_counted_and_reset() {
        let r = Recorder::new(Duration::from_secs(1), &[]).unwrap();
        let mut dead = RoundTrip::new("x");
        dead.legs = vec![leg(
            "tools/call #1",
            1,
            LegResult::Transport("refused".into()),
        )];
        dead.outcome = Outcome::unexpected(ErrorClass::Transport, "refused");
        r.record("a", &dead, Duration::from_millis(1), 0);
        r.record("a", &dead, Duration::from_millis(1), 0);
        assert_eq!(r.transport_streak(), 2);
        r.record("a", &rt(Outcome::Success), Duration::from_millis(1), 0);
        assert_eq!(r.transport_streak(), 0);
    }
}
