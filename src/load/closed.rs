//! The closed model on Goose 0.19: one Goose scenario, `elicitation`, with
//! one weighted transaction per plan scenario; each transaction is one round
//! trip.
//!
//! Every MRTR leg goes through `GooseUser::request` under its own name
//! (`tools/call #1`, `tools/call #2 retry`, `flow page GET`, …), so Goose's
//! request table shows each leg (Goose's times stop at the response
//! headers). The whole round trip is recorded with
//! `record_custom_request_duration("RT", <scenario>, …)`, and every leg's full
//! time goes to our [`super::metrics::Recorder`]. Legacy (2025-11-25) legs
//! use the legacy client on the user's reqwest client and are recorded as
//! custom requests (`POST <leg>`). Expected rejections are marked successes
//! in Goose; unexpected outcomes mark the final leg failed.
//!
//! Goose is configured in code (`GooseAttack::initialize_with_config`, no
//! argv parsing), with the telnet controller off, and stopped early
//! through `goose::trigger_killswitch` (request cap, dead target, Ctrl-C).

use super::scenarios::{LoadContext, leg_failure};
use crate::client::{Auth, HttpMethod, HttpReply, LegFailure, Outcome, Step};
use goose::config::GooseConfiguration;
use goose::goose::{GooseRequest, GooseUser, Scenario, Transaction, TransactionFunction};
use goose::metrics::GooseRequestMetric;
use goose::{GooseAttack, GooseError};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Goose report files written into the run folder.
pub const GOOSE_REPORTS: [&str; 3] = ["goose.html", "goose.json", "goose.md"];

/// Builds the Goose configuration for a closed-model run. (Goose refuses
/// `iterations` together with `run_time`, so the request cap is enforced by
/// our reservation plus the killswitch instead.)
pub fn goose_config(
    host: &str,
    users: usize,
    hatch_rate: f64,
    duration: Duration,
    timeout: Duration,
    dir: &Path,
) -> GooseConfiguration {
    let mut c = GooseConfiguration::default();
    c.host = Some(host.to_owned());
    c.users = Some(users.max(1));
    c.increase_rate = Some(format!("{hatch_rate}"));
    c.run_time = Some(format!("{}", duration.as_secs_f64().ceil().max(1.0) as u64));
    c.timeout = Some(format!("{}", timeout.as_secs_f64().ceil().max(1.0) as u64));
    c.report_file = GOOSE_REPORTS
        .iter()
        .map(|f| dir.join(f).display().to_string())
        .collect();
    c.no_telnet = true;
    c.no_reset_metrics = true;
    c.no_print_metrics = true;
    c.no_error_summary = true;
    c.quiet = 1;
    c
}

/// Runs the plan's scenarios on Goose until the duration or the killswitch
/// ends it.
pub async fn run(
    ctx: Arc<LoadContext>,
    config: GooseConfiguration,
) -> Result<goose::metrics::GooseMetrics, GooseError> {
    let mut scenario = Scenario::new("elicitation");
    for (idx, spec) in ctx.plan.scenarios.iter().enumerate() {
        let c = ctx.clone();
        let f: TransactionFunction = Arc::new(move |user: &mut GooseUser| {
            let c = c.clone();
            Box::pin(async move { round_trip(&c, idx, user).await })
        });
        let t = Transaction::new(f)
            .set_name(&spec.name)
            .set_weight(spec.weight as usize)?;
        scenario = scenario.register_transaction(t);
    }
    GooseAttack::initialize_with_config(config)?
        .register_scenario(scenario)
        .execute()
        .await
}

/// Sends one outgoing request through Goose; returns the reply or failure and
/// Goose's metric for the leg.
async fn goose_send(
    ctx: &LoadContext,
    user: &mut GooseUser,
    out: &crate::client::Outgoing,
) -> (
    Result<HttpReply, (LegFailure, Duration)>,
    Option<GooseRequestMetric>,
) {
    let started = Instant::now();
    let resolved = match (&out.target, &ctx.mcp_url) {
        (crate::client::Target::Mcp, Some(u)) => Ok(u.clone()),
        _ => ctx.endpoint.resolve(&out.target),
    };
    let url = match resolved {
        Ok(u) => u,
        Err(e) => return (Err((LegFailure::Transport(e), started.elapsed())), None),
    };
    let token = match out.auth {
        Auth::Primary => ctx.endpoint.primary_token.clone(),
        Auth::Other => ctx.endpoint.other_token.clone().unwrap_or_default(),
    };
    let method = match out.method {
        HttpMethod::Post => reqwest::Method::POST,
        HttpMethod::Get => reqwest::Method::GET,
    };
    let mut rb = user
        .client
        .request(method, url)
        .bearer_auth(token)
        .timeout(ctx.plan.timeout);
    for (k, v) in &out.headers {
        rb = rb.header(k.as_str(), v.as_str());
    }
    if out.method == HttpMethod::Post {
        rb = rb.body(out.body.clone());
    }
    let req = GooseRequest::builder()
        .name(out.leg.as_str())
        .set_request_builder(rb)
        .build();
    let resp = match user.request(req).await {
        Ok(r) => r,
        Err(e) => {
            return (
                Err((LegFailure::Transport(e.to_string()), started.elapsed())),
                None,
            );
        }
    };
    let metric = resp.request;
    let response = match resp.response {
        Ok(r) => r,
        Err(e) => return (Err((leg_failure(&e), started.elapsed())), Some(metric)),
    };
    let to_headers = started.elapsed();
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let content_type = header("content-type");
    let server_timing = header("server-timing");
    let left = ctx.plan.timeout.saturating_sub(to_headers);
    let body = match tokio::time::timeout(left, response.bytes()).await {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => return (Err((leg_failure(&e), started.elapsed())), Some(metric)),
        Err(_) => return (Err((LegFailure::Timeout, started.elapsed())), Some(metric)),
    };
    (
        Ok(HttpReply {
            status,
            content_type,
            server_timing,
            body,
            to_headers,
            total: started.elapsed(),
        }),
        Some(metric),
    )
}

/// One Goose transaction: one round trip of scenario `idx`.
async fn round_trip(
    ctx: &LoadContext,
    idx: usize,
    user: &mut GooseUser,
) -> goose::goose::TransactionResult {
    let Some(spec) = ctx.plan.scenarios.get(idx) else {
        return Ok(());
    };
    if ctx.stop.load(std::sync::atomic::Ordering::Relaxed) {
        // Stopping: idle briefly instead of spinning until Goose notices.
        tokio::time::sleep(Duration::from_millis(20)).await;
        return Ok(());
    }
    if spec.kind == super::plan::ScenarioKind::LegacyPush {
        let client = user.client.clone();
        let Some((rt, reserved)) = ctx.legacy_round_trip(&client, spec).await else {
            return Ok(());
        };
        ctx.recorder.record(&spec.name, &rt, rt.total, reserved);
        for leg in &rt.legs {
            let ok = !matches!(
                leg.result,
                crate::client::LegResult::Transport(_) | crate::client::LegResult::Timeout
            );
            user.record_custom_request_duration("POST", &leg.name, leg.total, ok, leg.status, None)
                .await?;
        }
        let ok = rt.outcome.is_ok();
        let err = (!ok).then(|| rt.outcome.label());
        return user
            .record_custom_request_duration("RT", &spec.name, rt.total, ok, None, err)
            .await;
    }
    let mut flow = ctx.flow_for(spec, ctx.next_seq());
    let started = Instant::now();
    let mut out = flow.start();
    let mut reserved = 0u64;
    let mut last_metric: Option<GooseRequestMetric> = None;
    let mut rt = loop {
        if !ctx.reserve() {
            return Ok(());
        }
        reserved += 1;
        let (reply, metric) = goose_send(ctx, user, &out).await;
        if metric.is_some() {
            last_metric = metric;
        }
        let step = match reply {
            Ok(r) => flow.on_reply(r),
            Err((failure, elapsed)) => flow.on_failure(failure, elapsed),
        };
        match step {
            Step::Send(next) => out = next,
            Step::Done(rt) => break rt,
        }
    };
    rt.total = started.elapsed();
    // Our metrics first: a Goose bookkeeping error must not lose the sample.
    ctx.recorder.record(&spec.name, &rt, rt.total, reserved);
    if let Some(mut m) = last_metric {
        match &rt.outcome {
            Outcome::ExpectedRejection { .. } | Outcome::Success => {
                user.set_success(&mut m)?;
            }
            Outcome::Unexpected { class, .. } => {
                user.set_failure(class.as_str(), &mut m, None, None)?;
            }
            Outcome::Skipped(_) => {}
        }
    }
    let ok = rt.outcome.is_ok();
    let err = (!ok).then(|| rt.outcome.label());
    user.record_custom_request_duration("RT", &spec.name, rt.total, ok, None, err)
        .await
}
