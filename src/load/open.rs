//! The open model: round trips start on a fixed schedule (a constant rate or
//! stepped ramp), whatever the target's speed, and each one's end-to-end
//! latency is measured from its *intended* start, so a slow target cannot
//! hide its queueing (no coordinated omission).
//!
//! At most `max_in_flight` round trips run at once; when the limit is
//! reached the scheduler waits, and the wait counts in the latency of every
//! late round trip. Scenarios are picked in a smooth weighted round robin.

use super::plan::RateStep;
use super::scenarios::{LoadContext, weighted_order};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// Runs the steps in order; returns the number of round trips started.
/// In-flight round trips are awaited (each is bounded by the per-leg
/// timeout) and aborted after `drain`.
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
    let sem = Arc::new(Semaphore::new(ctx.plan.max_in_flight.max(1)));
    let mut tasks = JoinSet::new();
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
            tokio::time::sleep_until(intended).await;
            let permit = match sem.clone().acquire_owned().await {
                Ok(p) => p,
                Err(_) => break 'steps,
            };
            let idx = order[(started % order.len() as u64) as usize];
            let c = ctx.clone();
            let h = http.clone();
            tasks.spawn(async move {
                let Some(spec) = c.plan.scenarios.get(idx) else {
                    return;
                };
                if let Some((rt, reserved)) = c.round_trip(&h, spec).await {
                    c.recorder
                        .record(&spec.name, &rt, intended.elapsed(), reserved);
                }
                drop(permit);
            });
            started += 1;
            k += 1;
            while tasks.try_join_next().is_some() {}
        }
        step_start += step.hold;
    }
    let _ = tokio::time::timeout(drain, async { while tasks.join_next().await.is_some() {} }).await;
    tasks.abort_all();
    started
}
