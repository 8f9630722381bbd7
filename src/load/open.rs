//! The open model: round trips start on a fixed schedule (a constant rate or
//! stepped ramp), whatever the target's speed, and each one's end-to-end
//! latency is measured from its *intended* start, so a slow target cannot
//! hide its queueing (no coordinated omission).
//!
//! The schedule runs on its own OS thread with `std::thread::sleep`
//! (tens of microseconds of jitter, where tokio's timer wheel rounds to a
//! millisecond, which would show up as latency the target never caused) and
//! hands each round trip to the async runtime. At most `max_in_flight` round
//! trips run at once; when the limit is reached the schedule waits, and the
//! wait counts in the latency of every late round trip. Scenarios are picked
//! in a smooth weighted round robin.

use super::plan::RateStep;
use super::scenarios::{LoadContext, weighted_order};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// Runs the steps in order; returns the number of round trips started.
/// In-flight round trips are awaited (each is bounded by the per-leg
/// timeout) for at most `drain`, then abandoned.
pub async fn run(
    ctx: Arc<LoadContext>,
    http: reqwest::Client,
    steps: &[RateStep],
    drain: Duration,
) -> u64 {
    let order = weighted_order(&ctx.plan.scenarios);
    if order.is_empty() {
        return 0;
    }
    let max = ctx.plan.max_in_flight.max(1);
    let sem = Arc::new(Semaphore::new(max));
    let handle = tokio::runtime::Handle::current();
    let steps = steps.to_vec();
    let (c, s) = (ctx.clone(), sem.clone());
    let scheduler = std::thread::Builder::new()
        .name("elicitkit-open-model".into())
        .spawn(move || schedule(c, http, &steps, &order, s, handle));
    let started = match scheduler {
        Ok(t) => tokio::task::spawn_blocking(move || t.join().unwrap_or(0))
            .await
            .unwrap_or(0),
        Err(_) => 0,
    };
    // Every permit back means every round trip has finished.
    let _ = tokio::time::timeout(drain, sem.acquire_many(max as u32)).await;
    started
}

fn schedule(
    ctx: Arc<LoadContext>,
    http: reqwest::Client,
    steps: &[RateStep],
    order: &[usize],
    sem: Arc<Semaphore>,
    handle: tokio::runtime::Handle,
) -> u64 {
    let mut started = 0u64;
    let mut step_start = Instant::now();
    'steps: for step in steps {
        if !(step.rate.is_finite() && step.rate > 0.0) {
            continue;
        }
        let period = 1.0 / step.rate;
        let hold = step.hold.as_secs_f64();
        let mut k = 0u64;
        loop {
            let offset = k as f64 * period;
            if offset >= hold {
                break;
            }
            if ctx.stop.load(Ordering::Relaxed) {
                break 'steps;
            }
            let intended = step_start + Duration::from_secs_f64(offset);
            let now = Instant::now();
            if intended > now {
                std::thread::sleep(intended - now);
            }
            let permit = match sem.clone().try_acquire_owned() {
                Ok(p) => p,
                Err(_) => match handle.block_on(sem.clone().acquire_owned()) {
                    Ok(p) => p,
                    Err(_) => break 'steps,
                },
            };
            let idx = order[(started % order.len() as u64) as usize];
            let c = ctx.clone();
            let h = http.clone();
            handle.spawn(async move {
                if let Some(spec) = c.plan.scenarios.get(idx)
                    && let Some((rt, reserved)) = c.round_trip(&h, spec).await
                {
                    c.recorder
                        .record(&spec.name, &rt, intended.elapsed(), reserved);
                }
                drop(permit);
            });
            started += 1;
            k += 1;
        }
        step_start += step.hold;
    }
    started
}
