//! The closed model on Goose 0.19: one Goose scenario, `elicitation`, with
//! one weighted transaction per plan scenario; each transaction is one round
//! trip, driven by [`LoadContext::round_trip`] (MRTR legs to the MCP
//! endpoint over a pooled HTTP/1.1 lane, pages and legacy legs over the
//! run's reqwest client, which every user shares and which trusts what the
//! run's TLS settings say; Goose's own client sends nothing).
//!
//! Goose keeps tables only when its reports are asked for (`--out goose`):
//! then its request table holds HTTP requests only: every leg under its own
//! name (`POST tools/call #1`, `POST tools/call #2 retry`, `POST flow page
//! GET`, …) with its full time, body included, through
//! `record_custom_request_duration`. The round trip is Goose's transaction,
//! named after its scenario, and fails in Goose's transaction table when the
//! round trip failed (a round trip recorded as a request too made the
//! table's `Aggregated` row count each round trip twice). Every leg also
//! goes to our [`crate::load::metrics::recorder::Recorder`]. Expected
//! rejections are successes in Goose; an unexpected outcome fails the round
//! trip and its last leg. A run stopped early (request cap, dead target,
//! Ctrl-C) leaves its users idling in 20 ms transactions until Goose stops
//! them. Goose's scenario table is off (see [`goose_config`]).
//!
//! Goose is configured in code (`GooseAttack::initialize_with_config`, no
//! argv parsing), with the telnet controller off, and stopped early
//! through `goose::trigger_killswitch` (request cap, dead target, Ctrl-C).

use super::round_trip::LoadContext;
use crate::client::LegResult;
use crate::load::spec::shape::Stage;
use goose::client::GooseClientBuilder;
use goose::config::GooseConfiguration;
use goose::config::{GooseDefault, GooseDefaultType};
use goose::goose::{GooseUser, Scenario, Transaction, TransactionError, TransactionFunction};
use goose::{GooseAttack, GooseError};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Goose report files written into the run folder. Not Goose's HTML page:
/// it draws its charts with a script from a CDN, so offline it is blank
/// (`report.html` beside it is self-contained).
pub const GOOSE_REPORTS: [&str; 2] = ["goose.json", "goose.md"];

/// How Goose shapes a closed-model run.
#[derive(Debug, Clone, PartialEq)]
pub enum GooseShape {
    /// `users` launched at `hatch_rate` per second, then held for
    /// `hold` (rounded up to whole seconds: Goose's `run_time`).
    Fixed {
        /// Users.
        users: usize,
        /// Users started per second.
        hatch_rate: f64,
        /// How long they run once launched.
        hold: Duration,
    },
    /// A Goose test plan (`users,seconds;…`) built from stages.
    Plan(String),
}

/// Stages as a Goose test plan: each stage moves to its users over its
/// seconds, Goose's own linear launch and stop; a final `0,0` stops the
/// users at once when the last stage ends with some running.
pub fn goose_test_plan(stages: &[Stage]) -> String {
    let mut steps: Vec<String> = stages
        .iter()
        .map(|s| format!("{},{}", s.target.round() as u64, s.duration.as_secs()))
        .collect();
    if stages.last().is_some_and(|s| s.target.round() > 0.0) {
        steps.push("0,0".into());
    }
    steps.join(";")
}

/// Builds the Goose configuration for a closed-model run. (Goose refuses
/// `iterations` together with `run_time`, so the request cap is enforced by
/// our reservation plus the killswitch instead.) A test plan is set on the
/// attack itself ([`drive`]), as Goose only takes it as a default.
///
/// `reports`: the folder that receives Goose's own reports
/// ([`GOOSE_REPORTS`], `--out goose`). Without it Goose keeps no metrics at
/// all (`no_metrics`) and [`drive`] records no leg in it: Goose's per-leg
/// bookkeeping (a metric built, batched and aggregated per request) cost
/// about 1 µs of the generator's 20 µs per request on the trivial endpoint
/// (64 users), for tables that our own report already holds by leg.
pub fn goose_config(
    host: &str,
    shape: &GooseShape,
    timeout: Duration,
    reports: Option<&Path>,
) -> GooseConfiguration {
    let mut c = GooseConfiguration::default();
    c.host = Some(host.to_owned());
    if let GooseShape::Fixed {
        users,
        hatch_rate,
        hold,
    } = shape
    {
        c.users = Some((*users).max(1));
        c.increase_rate = Some(format!("{hatch_rate}"));
        c.run_time = Some(format!("{}", hold.as_secs_f64().ceil().max(1.0) as u64));
        c.no_reset_metrics = true;
    }
    c.timeout = Some(format!("{}", timeout.as_secs_f64().ceil().max(1.0) as u64));
    match reports {
        Some(dir) => {
            c.report_file = GOOSE_REPORTS
                .iter()
                .map(|f| dir.join(f).display().to_string())
                .collect();
        }
        None => c.no_metrics = true,
    }
    c.no_telnet = true;
    c.no_print_metrics = true;
    // Goose's scenario table counts passes through the one Goose scenario
    // that holds every plan scenario as a weighted transaction: no unit a
    // reader can use, and a metric built per round trip.
    c.no_scenario_metrics = true;
    c.no_error_summary = true;
    c.quiet = 1;
    c
}

/// Points file descriptor 1 at `/dev/null` until dropped. Goose prints
/// "All 4 users launched." with `println!` unconditionally; stdout holds
/// elicitkit's result, and on stderr the line broke into the live view
/// mid-line, which already shows the phase (launch, measuring). Nothing
/// else in this process writes to stdout while a closed-model phase runs
/// (progress goes to stderr).
struct StdoutDiverted {
    #[cfg(unix)]
    saved: libc::c_int,
}

impl StdoutDiverted {
    fn new() -> Option<StdoutDiverted> {
        #[cfg(unix)]
        {
            use std::io::Write as _;
            use std::os::fd::AsRawFd as _;
            let _ = std::io::stdout().flush();
            let sink = std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/null")
                .ok()?;
            // SAFETY: dup/dup2 on descriptors this process owns; `saved`
            // keeps the original stdout open until `drop` puts it back.
            unsafe {
                let saved = libc::dup(1);
                if saved < 0 {
                    return None;
                }
                if libc::dup2(sink.as_raw_fd(), 1) < 0 {
                    libc::close(saved);
                    return None;
                }
                Some(StdoutDiverted { saved })
            }
        }
        #[cfg(not(unix))]
        {
            None
        }
    }
}

impl Drop for StdoutDiverted {
    fn drop(&mut self) {
        #[cfg(unix)]
        {
            use std::io::Write as _;
            let _ = std::io::stdout().flush();
            // SAFETY: `saved` is the descriptor `new` duplicated.
            unsafe {
                libc::dup2(self.saved, 1);
                libc::close(self.saved);
            }
        }
    }
}

/// Runs the plan's scenarios on Goose until the duration or the killswitch
/// ends it; Goose's own lines go nowhere ([`StdoutDiverted`]).
pub async fn drive(
    ctx: Arc<LoadContext>,
    http: reqwest::Client,
    config: GooseConfiguration,
    shape: &GooseShape,
) -> Result<goose::metrics::GooseMetrics, GooseError> {
    let mut scenario = Scenario::new("elicitation");
    let in_goose = !config.no_metrics;
    for (idx, spec) in ctx.plan.scenarios.iter().enumerate() {
        let (c, http) = (ctx.clone(), http.clone());
        let f: TransactionFunction = Arc::new(move |user: &mut GooseUser| {
            let (c, http) = (c.clone(), http.clone());
            Box::pin(async move { round_trip(&c, &http, idx, user, in_goose).await })
        });
        let t = Transaction::new(f)
            .set_name(&spec.name)
            .set_weight(spec.weight as usize)?;
        scenario = scenario.register_transaction(t);
    }
    let _diverted = StdoutDiverted::new();
    // One client shared by every user (no cookie jar: Goose is built
    // without its cookies feature, so no user had one): Goose otherwise
    // builds a client per user, and each build parses the system's root
    // certificates, a cost per user (about 6 % of the generator's CPU at 512
    // users). Plain-http MRTR legs go over our own lanes anyway.
    let mut attack = GooseAttack::initialize_with_config(config)?
        .set_client_builder_without_cookies(GooseClientBuilder::new().without_cookies())?;
    if let GooseShape::Plan(plan) = shape {
        attack = *attack.set_default(GooseDefault::TestPlan, plan.as_str())?;
    }
    attack.register_scenario(scenario).execute().await
}

/// One Goose transaction: one round trip of scenario `idx`, its legs
/// recorded in Goose when `in_goose` (its reports were asked for); a failed
/// round trip fails the transaction.
async fn round_trip(
    ctx: &LoadContext,
    http: &reqwest::Client,
    idx: usize,
    user: &mut GooseUser,
    in_goose: bool,
) -> goose::goose::TransactionResult {
    let Some(spec) = ctx.plan.scenarios.get(idx) else {
        return Ok(());
    };
    // Stopping (or the cap was just reached): idle briefly. A transaction
    // that returns without awaiting anything never yields its worker, which
    // can starve the tasks that would stop the run.
    let idle = Duration::from_millis(20);
    if ctx.stop.load(std::sync::atomic::Ordering::Relaxed) {
        tokio::time::sleep(idle).await;
        return Ok(());
    }
    // Goose numbers its users from 0; each keeps its principal.
    let who = Some(user.weighted_users_index);
    let Some((rt, reserved)) = ctx.round_trip(http, idx, who).await else {
        tokio::time::sleep(idle).await;
        return Ok(());
    };
    // Our metrics first: a Goose bookkeeping error must not lose the sample.
    // A round trip long against this user's pacing held back others
    // (coordinated omission): the recorder backfills them.
    let pacing = ctx.cadence.note(user.weighted_users_index, idx, rt.total);
    ctx.recorder
        .record_paced(&spec.name, &rt, rt.total, reserved, pacing);
    // Goose keeps tables only when its reports were asked for: nothing
    // else to hand it (a failure would only be formatted for nothing).
    if !in_goose {
        return Ok(());
    }
    let ok = rt.outcome.is_ok();
    let last = rt.legs.len().saturating_sub(1);
    for (i, leg) in rt.legs.iter().enumerate() {
        let reached = !matches!(leg.result, LegResult::Transport(_) | LegResult::Timeout);
        // An unexpected outcome fails the leg that revealed it: the last.
        let leg_ok = reached && (ok || i != last);
        let err = (!leg_ok).then(|| rt.outcome.label());
        user.record_custom_request_duration("POST", &leg.name, leg.total, leg_ok, leg.status, err)
            .await?;
    }
    if ok {
        Ok(())
    } else {
        Err(Box::new(TransactionError::Custom(
            rt.outcome.label().into(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::spec::shape::parse_stages;

    #[test]
    fn stages_become_a_goose_test_plan() {
        let s = parse_stages("10s:50,30s:50,10s:0").unwrap();
        assert_eq!(goose_test_plan(&s), "50,10;50,30;0,10");
        let s = parse_stages("0s:4,5s:4").unwrap();
        assert_eq!(
            goose_test_plan(&s),
            "4,0;4,5;0,0",
            "ends by stopping the users"
        );
    }
}
