//! The open model: round trips start on a fixed schedule (a constant rate or
//! stages, [`crate::load::spec::shape::Arrivals`]), whatever the target's speed, and each one's end-to-end
//! latency is measured from its *intended* start, so a slow target cannot
//! hide its queueing (no coordinated omission).
//!
//! The schedule runs as a few shard tasks on the async runtime. Each shard
//! owns every `n`-th slot of the one global schedule, waits for its slots
//! on a [`PreciseTimer`] (sub-millisecond, where tokio's wheel rounds to a
//! millisecond, which would show up as latency the target never caused),
//! and drives its round trips itself in a `FuturesUnordered`: with the
//! HTTP/1.1 lane polling its connection in place, a round trip costs no
//! thread hand-off at all. One shard serves up to [`RATE_PER_SHARD`] round
//! trips/s; more run in parallel, at most one per core.
//!
//! At most `max_in_flight` round trips run at once (split across shards);
//! when a shard is full it waits for one to finish, and the wait counts in
//! the latency of every late round trip. Scenarios are picked in a smooth
//! weighted round robin.
//!
//! A segment of a distributed run (`--segment I/N`) walks the whole
//! schedule and takes every N-th arrival of it ([`crate::load::spec::segment`]).
//!
//! The run ends on time whatever the target does: no slot starts after the
//! schedule's end, round trips still in flight get at most the drain time,
//! and those cut off then are recorded as timeouts (they were due and did
//! not finish), not dropped.

use super::round_trip::{LoadContext, weighted_order};
use super::timer::PreciseTimer;
use crate::load::spec::shape::{self, Arrivals, Stage};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How far ahead of its slot a round trip may start when the shard is
/// awake anyway (its timer fired for an earlier slot, or a reply just
/// arrived): one wake-up then serves every slot due within this window,
/// where sleeping until each slot would cost a timer wake-up per round trip
/// (the generator's main cost at a few thousand round trips/s). 1 ms is the
/// resolution of tokio's own timer, which other generators (oha `-q`) sleep
/// on and start *late* by; here slots start at most this *early*, so no
/// latency the target did not cause is added: latency is measured from the
/// earlier of the slot and the actual start, and starts are never more
/// than this ahead of the clock, so the schedule cannot run ahead. At
/// 3,000/s against the trivial endpoint it took generator CPU per request
/// from 1.30-1.33x oha's to 0.69-0.91x (200 µs before; same run,
/// alternated), and the target's CPU per request down with it.
pub const EARLY_SLACK: Duration = Duration::from_millis(1);

/// Round trips per second one shard task schedules before another is added.
/// Measured on 2 cores against the trivial endpoint at 10,000/s: one worker
/// spent 48 µs of CPU per round trip, two spent 57 (cross-worker wake-ups);
/// one shard would saturate its core near 30,000/s.
pub const RATE_PER_SHARD: f64 = 20_000.0;

/// Shards (and runtime worker threads) for a peak rate on `cores` cores.
/// Extra idle workers cost wake-ups: tokio wakes a sibling to look for
/// work at every event (at 3000/s, 2 workers spent 99 µs of CPU per round
/// trip where 1 spent 82).
pub fn shards_for(peak_rate: f64, cores: usize) -> usize {
    let wanted = (peak_rate / RATE_PER_SHARD).ceil();
    if wanted.is_finite() && wanted >= 1.0 {
        (wanted as usize).clamp(1, cores.max(1))
    } else {
        1
    }
}

/// Runs the stages' schedule; returns the number of round trips started.
/// In-flight round trips are awaited (each is bounded by the per-leg
/// timeout) for at most `drain`, then abandoned.
pub async fn drive(
    ctx: Arc<LoadContext>,
    http: reqwest::Client,
    stages: &[Stage],
    drain: Duration,
) -> u64 {
    let order: Arc<[usize]> = weighted_order(&ctx.plan.scenarios).into();
    if order.is_empty() {
        return 0;
    }
    let peak = shape::peak(stages);
    let workers = tokio::runtime::Handle::current().metrics().num_workers();
    let shards = shards_for(peak, workers);
    let limit = ctx.plan.max_in_flight.max(1).div_ceil(shards);
    let stages: Arc<[Stage]> = stages.into();
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(shards);
    for shard in 0..shards {
        let job = Shard {
            ctx: ctx.clone(),
            http: http.clone(),
            stages: stages.clone(),
            order: order.clone(),
            shard,
            shards,
            limit,
            drain,
        };
        tasks.push(tokio::spawn(job.run(start)));
    }
    let mut started = 0;
    for t in tasks {
        started += t.await.unwrap_or(0);
    }
    started
}

/// One shard of the schedule and its in-flight round trips.
struct Shard {
    ctx: Arc<LoadContext>,
    http: reqwest::Client,
    stages: Arc<[Stage]>,
    order: Arc<[usize]>,
    shard: usize,
    shards: usize,
    limit: usize,
    drain: Duration,
}

type RoundTripFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

impl Shard {
    async fn run(self, start: Instant) -> u64 {
        let mut timer = match PreciseTimer::new() {
            Ok(t) => t,
            Err(e) => {
                tracing::error!("open model: no timer: {e}");
                return 0;
            }
        };
        let mut in_flight: FuturesUnordered<RoundTripFuture> = FuturesUnordered::new();
        let mut started = 0u64;
        let mut slot = 0u64; // this segment's arrivals so far
        let end = start + shape::total(&self.stages);
        let segment = self.ctx.plan.segment;
        let mut schedule = Arrivals::new(&self.stages).enumerate();
        // Set when the schedule's end or a stop came before an arrival could
        // start: its slot, and whether the in-flight cap was holding it.
        let mut overdue: Option<(Instant, bool)> = None;
        // When the shard last stopped waiting for room under the in-flight
        // cap. An arrival that fell due before then was kept back by the cap
        // (the target's pace) even if the cap had room by the time its turn
        // came: the backlog a full cap leaves is the target's, not the
        // generator's. Counted as late instead, a target that filled the cap
        // made the run read as a slow generator (INCONCLUSIVE) on one run
        // and as the target's (held) on the next.
        let mut cap_freed: Option<Instant> = None;
        // Whether arrival `k` is this shard's: a segment of a distributed run
        // takes every N-th arrival of the whole schedule
        // (crate::load::spec::segment), and the shards of a segment take
        // its arrivals in turn. Counts the segment's arrivals in `slot`.
        let mine = |k: usize, slot: &mut u64| {
            if !segment.owns(k as u64) {
                return false;
            }
            *slot += 1;
            (*slot - 1) % self.shards as u64 == self.shard as u64
        };
        'schedule: for (k, offset) in schedule.by_ref() {
            if !mine(k, &mut slot) {
                continue;
            }
            let intended = start + Duration::from_secs_f64(offset);
            // Time spent waiting for room under the in-flight cap: the
            // target's doing, not the generator's (see metrics::generator).
            let mut held = Duration::ZERO;
            // Drive what is in flight until the slot is due and there is room.
            loop {
                let full = in_flight.len() >= self.limit;
                if self.ctx.stop.load(Ordering::Relaxed) {
                    overdue = Some((intended, full));
                    break 'schedule;
                }
                if Instant::now() >= end {
                    overdue = Some((intended, full));
                    break 'schedule;
                }
                if !full && Instant::now() + EARLY_SLACK >= intended {
                    break;
                }
                if full {
                    let waited = Instant::now();
                    tokio::select! {
                        _ = in_flight.next() => {}
                        _ = tokio::time::sleep_until(end.into()) => {
                            overdue = Some((intended, true));
                            break 'schedule;
                        }
                    }
                    held += waited.elapsed();
                    cap_freed = Some(Instant::now());
                    continue;
                }
                tokio::select! {
                    biased;
                    Some(()) = in_flight.next(), if !in_flight.is_empty() => {}
                    r = timer.sleep_until(intended) => {
                        if let Err(e) = r {
                            tracing::error!("open model: timer failed: {e}");
                            break 'schedule;
                        }
                    }
                }
            }
            let idx = self.order[(slot - 1) as usize % self.order.len()];
            let now = Instant::now();
            self.ctx.recorder.slip().note(
                now.saturating_duration_since(intended),
                held_back(intended, held, cap_freed),
            );
            let origin = intended.min(now);
            in_flight.push(Box::pin(round_trip(
                self.ctx.clone(),
                self.http.clone(),
                idx,
                origin,
            )));
            started += 1;
        }
        // Arrivals due by now (the schedule's end, or a stop: a dead target,
        // Ctrl-C) that never started are the plan's too: held by the cap, or
        // late, by how long they were due. A generator starved of CPU when
        // the run stops early has its shortfall here, not in what started.
        if let Some((first, held)) = overdue {
            let now = Instant::now();
            let rest = schedule
                .filter(|&(k, _)| mine(k, &mut slot))
                .map(|(_, offset)| start + Duration::from_secs_f64(offset));
            for intended in std::iter::once(first).chain(rest) {
                if intended > now {
                    break; // not yet due (the schedule is in order)
                }
                let slip = now - intended;
                let held = if held {
                    slip.max(Duration::from_nanos(1))
                } else {
                    held_back(intended, Duration::ZERO, cap_freed)
                };
                self.ctx.recorder.slip().note(slip, held);
            }
        }
        let drain = async { while in_flight.next().await.is_some() {} };
        let _ = tokio::time::timeout(self.drain, drain).await;
        started
    }
}

/// How long the in-flight cap held back an arrival due at `intended` that
/// waited `held` for room itself: when the cap last freed a place after
/// the arrival fell due (`cap_freed`), the arrival was in the backlog the
/// full cap left, and its wait up to then is the cap's.
fn held_back(intended: Instant, held: Duration, cap_freed: Option<Instant>) -> Duration {
    match cap_freed {
        Some(freed) if held.is_zero() && freed > intended => freed - intended,
        _ => held,
    }
}

/// One scheduled round trip, recorded with its latency from `intended`
/// (its slot, or its actual start when that came first).
async fn round_trip(ctx: Arc<LoadContext>, http: reqwest::Client, idx: usize, intended: Instant) {
    let mut unfinished = Unfinished {
        ctx: ctx.clone(),
        idx,
        intended,
        armed: true,
    };
    if let Some(spec) = ctx.plan.scenarios.get(idx)
        && let Some((rt, reserved)) = ctx.round_trip(&http, idx, None).await
    {
        ctx.recorder
            .record(&spec.name, &rt, intended.elapsed(), reserved);
    }
    unfinished.armed = false;
}

/// Records a round trip cut off at the end of the drain as a timeout.
struct Unfinished {
    ctx: Arc<LoadContext>,
    idx: usize,
    intended: Instant,
    armed: bool,
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Some(spec) = self.ctx.plan.scenarios.get(self.idx) else {
            return;
        };
        let mut rt = crate::client::RoundTrip::new(spec.name.clone());
        rt.outcome = crate::client::Outcome::unexpected(
            crate::client::ErrorClass::Timeout,
            "still in flight when the run ended (cut off after the drain time)",
        );
        self.ctx
            .recorder
            .record(&spec.name, &rt, self.intended.elapsed(), 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_follow_the_peak_rate_up_to_the_cores() {
        assert_eq!(shards_for(3000.0, 2), 1);
        assert_eq!(shards_for(10_000.0, 2), 1);
        assert_eq!(shards_for(RATE_PER_SHARD, 4), 1);
        assert_eq!(shards_for(RATE_PER_SHARD + 1.0, 4), 2);
        assert_eq!(shards_for(1e9, 4), 4);
        assert_eq!(shards_for(0.0, 4), 1);
        assert_eq!(shards_for(f64::NAN, 4), 1);
        assert_eq!(shards_for(50_000.0, 0), 1);
    }

    /// A generator kept off its thread until the run stops (a dead target
    /// stopped it) fell behind: the arrivals due meanwhile, never started,
    /// count as late, as at the schedule's end. They were not counted, so a
    /// starved run cut short read as a healthy generator.
    #[tokio::test]
    async fn arrivals_due_before_a_stop_that_never_started_are_late() {
        use crate::load::metrics::recorder::Recorder;
        let plan = crate::load::spec::parse::parse_plan(
            "[load]\nrate = 1000\n[scenarios.form-accept]\n",
            "p.toml",
            "p",
        )
        .unwrap();
        let rec = Arc::new(Recorder::new(Duration::from_secs(1), &[]).unwrap());
        // Port 9 (discard) refuses at once: round trips end quickly.
        let ctx = Arc::new(LoadContext::new(
            plan,
            "http://127.0.0.1:9/mcp".into(),
            rec.clone(),
        ));
        let stages = shape::parse_stages("0s:1000,30s:1000").unwrap();
        let run = tokio::spawn({
            let ctx = ctx.clone();
            async move {
                drive(ctx, reqwest::Client::new(), &stages, Duration::ZERO).await;
            }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Starve the runtime's one thread, then stop the run.
        std::thread::sleep(Duration::from_millis(700));
        ctx.stop.store(true, Ordering::Relaxed);
        run.await.unwrap();
        let c = rec.slip().counts().expect("arrivals");
        // ~750 due by the stop, ~450 of them more than 250 ms overdue.
        assert!(c.arrivals >= 600, "{c:?}");
        assert!(c.late + c.held_late >= 300, "{c:?}");
        assert!(c.arrivals < 2000, "only what was due counts: {c:?}");
    }
}
