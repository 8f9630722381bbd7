//! Scenario execution shared by the Goose (closed) and open-model drivers:
//! the answer policy of each scenario kind, and one round trip driven to its
//! end — MRTR requests to the MCP endpoint over a pooled [`H1Lane`] (plain
//! `http` targets), everything else over reqwest.
//!
//! Every request first reserves a slot against the plan's hard request cap;
//! a round trip that hits the cap is abandoned and not recorded.
//!
//! With several target URLs (`--target A,B`), round trip `n` sends its
//! first `tools/call` to URL `n mod k` and every later call (each retry
//! with `inputResponses` and `requestState`) to the next URL, so every
//! retry crosses to another instance, as MRTR permits; its flow pages go
//! where its last call went. Each leg's answering instance is noted in
//! [`RoundTrip::instances`] (see [`crate::load::metrics::instances`]).
//!
//! Every round trip runs as one of the plan's principals
//! ([`crate::load::spec::principals`]): a closed-model user always as the
//! same one, open-model round trips as each in turn. Pooled lanes take the
//! round trip's tokens. 2025-11-25 sessions are pooled per principal for
//! closed-model users (a user keeps its own sessions); open-model round
//! trips share one pool whose new sessions take the principals in turn,
//! so sessions stay about as many as the round trips in flight.

use crate::client::h1::bearer;
use crate::client::legacy::{LegacyClient, LegacyConfig};
use crate::client::{
    AnswerPolicy, CallTemplate, Endpoint, Exchange, Expectations, FlowConfig, H1Lane, LegReply,
    LegResult, ModernFlow, Outgoing, RoundTrip, Target, ToolCall, drive,
};
use crate::load::metrics::cadence::CadenceBook;
use crate::load::metrics::instances::UNKNOWN;
use crate::load::metrics::recorder::Recorder;
use crate::load::spec::plan::{LoadShape, Plan, ScenarioKind, ScenarioSpec};
use crate::load::spec::principals::other_for;
use crate::load::spec::shape::{self, Model};
use http::HeaderValue;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The answer policy a scenario kind uses.
pub fn policy_for(spec: &ScenarioSpec) -> AnswerPolicy {
    match spec.kind {
        ScenarioKind::FormAccept
        | ScenarioKind::MultiRound
        | ScenarioKind::UrlFlow
        | ScenarioKind::LegacyPush
        | ScenarioKind::Call => AnswerPolicy::AcceptValid,
        ScenarioKind::FormDecline => AnswerPolicy::Decline,
        ScenarioKind::FormCancel => AnswerPolicy::Cancel,
        ScenarioKind::Tamper => AnswerPolicy::TamperState(spec.mutation.clone()),
        ScenarioKind::Replay => AnswerPolicy::ReplayState,
    }
}

/// What a scenario's round trip must do to count as a success: elicit,
/// end without `isError` unless the plan allows it, and have a probed state
/// refused for the probed reason.
pub fn expectations_for(spec: &ScenarioSpec) -> Expectations {
    Expectations {
        tool_error_ok: spec.expect_tool_error,
        elicit: spec.kind != ScenarioKind::Call,
        ..Expectations::STRICT
    }
}

/// The flow settings of a scenario (seed and ids are set per round trip).
/// Load runs judge a final result by its verdict and do not keep its tree.
fn flow_config(spec: &ScenarioSpec) -> FlowConfig {
    let mut cfg = FlowConfig::with_policy(policy_for(spec));
    cfg.scenario = Some(spec.name.clone());
    cfg.keep_final_result = false;
    cfg.expect = expectations_for(spec);
    cfg.pinned = (!spec.answers.is_empty()).then(|| Arc::new(spec.answers.clone()));
    cfg
}

/// The tool call a scenario makes.
fn tool_call(spec: &ScenarioSpec) -> ToolCall {
    ToolCall {
        name: spec.tool.clone(),
        arguments: spec.arguments.clone(),
    }
}

/// Everything a driver needs for one run, shared by all users or tasks.
#[derive(Debug)]
pub struct LoadContext {
    /// The plan.
    pub plan: Plan,
    /// Endpoint and tokens (the first target).
    pub endpoint: Endpoint,
    /// Every target (the first is `endpoint`); round trips are spread over
    /// them.
    pub endpoints: Vec<Endpoint>,
    /// Metrics.
    pub recorder: Arc<Recorder>,
    /// Set when the request cap was reached.
    pub cap_reached: AtomicBool,
    /// Set to stop starting new round trips (dead target, Ctrl-C, end).
    pub stop: AtomicBool,
    seq: AtomicU64,
    /// The principals round trips run as.
    principals: Vec<Principal>,
    /// The next principal of the open model's rotation.
    turn: AtomicU64,
    /// Idle 2025-11-25 sessions of closed-model users, per principal (a
    /// session is its principal's).
    legacy_pools: Vec<Mutex<Vec<LegacyClient>>>,
    /// Idle 2025-11-25 sessions of open-model round trips, any principal.
    shared_pool: Mutex<Vec<LegacyClient>>,
    /// Each scenario's call template and flow settings, built once and
    /// shared by its round trips (same order as the plan's scenarios).
    flows: Vec<(Arc<CallTemplate>, Arc<FlowConfig>)>,
    /// Idle HTTP/1.1 lanes to each endpoint (plain `http` targets only).
    /// Boxed: a lane (about 600 bytes) moves in and out of its pool with
    /// every round trip, and a box moves as a pointer.
    #[allow(clippy::vec_box)]
    lanes: Vec<Mutex<Vec<Box<H1Lane>>>>,
    /// Per scenario, the argument that carries each round trip's marker.
    markers: Vec<Option<String>>,
    /// Closed model: each user's pacing per scenario, for the round trips
    /// a stall held back (empty in the open model, whose latency counts
    /// from each slot already).
    pub cadence: CadenceBook,
}

impl LoadContext {
    /// A context for `plan` against `mcp_url` (and the plan's
    /// `target.more_urls`).
    pub fn new(plan: Plan, mcp_url: String, recorder: Arc<Recorder>) -> Self {
        let t = &plan.target;
        let tokens = t
            .principals
            .tokens(&t.token, &plan.shape, plan.max_in_flight);
        let principals: Vec<Principal> = tokens
            .iter()
            .enumerate()
            .map(|(i, own)| Principal::new(own, &other_for(own, &t.other_token, &tokens, i)))
            .collect();
        let endpoints: Vec<Endpoint> = std::iter::once(mcp_url)
            .chain(plan.target.more_urls.iter().cloned())
            .map(|mcp_url| Endpoint {
                mcp_url,
                primary_token: plan.target.token.clone(),
                other_token: Some(plan.target.other_token.clone()),
            })
            .collect();
        let endpoint = endpoints[0].clone();
        // Pages of one target's instances are followed; with several
        // targets, pages may be on any of their origins.
        let origin = url::Url::parse(&endpoint.mcp_url)
            .ok()
            .filter(|_| endpoints.len() == 1)
            .map(|u| u.origin().ascii_serialization());
        let flows = plan
            .scenarios
            .iter()
            .map(|spec| {
                let mut cfg = flow_config(spec);
                cfg.page_origin = origin.clone();
                let tpl = Arc::new(CallTemplate::new(tool_call(spec), &cfg));
                (tpl, Arc::new(cfg))
            })
            .collect();
        let users = match &plan.shape {
            LoadShape::Closed { users, .. } => *users,
            LoadShape::Staged {
                model: Model::Closed,
                stages,
            } => shape::peak(stages).round() as usize,
            _ => 0,
        };
        let cadence = CadenceBook::new(users, plan.scenarios.len());
        LoadContext {
            cadence,
            flows,
            lanes: endpoints.iter().map(|_| Mutex::new(Vec::new())).collect(),
            plan,
            endpoint,
            endpoints,
            recorder,
            cap_reached: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            seq: AtomicU64::new(0),
            legacy_pools: principals.iter().map(|_| Mutex::new(Vec::new())).collect(),
            shared_pool: Mutex::new(Vec::new()),
            principals,
            turn: AtomicU64::new(0),
            markers: Vec::new(),
        }
    }

    /// A fresh sequence number (seeds and markers differ per round trip):
    /// the whole run's number, so segments of a distributed run
    /// (`--segment I/N`) never share one.
    pub fn next_seq(&self) -> u64 {
        let local = self.seq.fetch_add(1, Ordering::Relaxed);
        self.plan.segment.global(local)
    }

    /// Puts each round trip's marker into argument `args[i]` of scenario
    /// `i` (`None`: that scenario has no free-string argument to carry it;
    /// see [`crate::client::marker`]).
    pub fn mark(mut self, args: &[Option<String>]) -> Self {
        for ((tpl, _), arg) in self.flows.iter_mut().zip(args) {
            if let Some(arg) = arg {
                *tpl = Arc::new(CallTemplate::clone(tpl).with_marker_in(arg));
            }
        }
        self.markers = args.to_vec();
        self
    }

    /// The MRTR flow for round trip `n` of scenario `idx` of the plan. Every
    /// round trip numbers its JSON-RPC ids from 1, as a fresh client does,
    /// so concurrent round trips reuse the same ids: an id alone cannot
    /// tell whose a reply is, its marker `n` can.
    pub fn flow_for(&self, idx: usize, n: u64) -> Option<ModernFlow> {
        let (tpl, cfg) = self.flows.get(idx)?;
        let seed = self.plan.seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Some(ModernFlow::for_round_trip(
            tpl.clone(),
            cfg.clone(),
            (seed, 1, Some(n)),
        ))
    }

    /// How many principals the round trips run as.
    pub fn principal_count(&self) -> usize {
        self.principals.len()
    }

    /// The principal of closed-model user `user` (its index in this
    /// process; the segment makes it the whole run's), or, for `None`,
    /// the next one in turn.
    pub fn principal_for(&self, user: Option<usize>) -> usize {
        let n = self.principals.len().max(1) as u64;
        let k = match user {
            Some(u) => self.plan.segment.global(u as u64),
            None => self.turn.fetch_add(1, Ordering::Relaxed),
        };
        (k % n) as usize
    }

    /// Principal `p`'s own token (the first principal's when out of range).
    pub fn principal_token(&self, p: usize) -> &str {
        self.principals
            .get(p)
            .or(self.principals.first())
            .map_or(self.plan.target.token.as_str(), |w| w.token.as_str())
    }

    /// Principal `p`'s tokens on endpoint `at`, for the reqwest path.
    fn endpoint_as(&self, at: usize, p: usize) -> Endpoint {
        let e = &self.endpoints[at.min(self.endpoints.len() - 1)];
        match self.principals.get(p) {
            Some(who) => Endpoint {
                mcp_url: e.mcp_url.clone(),
                primary_token: who.token.clone(),
                other_token: Some(who.other.clone()),
            },
            None => e.clone(),
        }
    }

    /// Reserves one request against the cap; on refusal marks the cap.
    pub fn reserve(&self) -> bool {
        if self.stop.load(Ordering::Relaxed) {
            return false;
        }
        let ok = self.recorder.try_reserve(1, self.plan.max_requests);
        if !ok {
            self.cap_reached.store(true, Ordering::Relaxed);
        }
        ok
    }

    /// Runs one MRTR round trip of scenario `idx`: requests to the MCP
    /// endpoint and to pages on its origin go over a pooled [`H1Lane`] when
    /// the target is plain `http`, the rest (pages elsewhere, `https`) over
    /// `http`. With several targets, the first call goes to the next target
    /// in turn and each later call to the one after (see the module docs).
    /// Each leg's answering instance is interned into the recorder's table
    /// and noted in [`RoundTrip::instances`]. `None` when the cap or a stop
    /// cut it short (nothing is recorded then). Returns the round trip and
    /// how many requests it reserved.
    pub async fn modern_round_trip(
        &self,
        http: &reqwest::Client,
        idx: usize,
        principal: usize,
    ) -> Option<(RoundTrip, u64)> {
        let n = self.next_seq();
        let mut flow = self.flow_for(idx, n)?;
        let k = self.endpoints.len().max(1);
        let mut lanes = Lanes {
            ctx: self,
            http,
            k,
            at: (n % k as u64) as usize,
            principal,
            calls: 0,
            lane: None,
            instances: Vec::with_capacity(4),
            reserved: 0,
        };
        // Lent, not moved: the flow is held once, in this future.
        let ended = drive(&mut flow, &mut lanes).await;
        if let Some((i, Some(l))) = lanes.lane.take() {
            self.put_lane(i, l);
        }
        let mut rt = ended.ok()?;
        lanes.instances.truncate(rt.legs.len());
        rt.instances = lanes.instances;
        Some((rt, lanes.reserved))
    }

    /// An idle lane to endpoint `i`, or a new one (`None` when that
    /// endpoint needs reqwest).
    fn take_lane(&self, i: usize) -> Option<Box<H1Lane>> {
        let idle = self.lanes.get(i)?.lock().ok().and_then(|mut v| v.pop());
        idle.or_else(|| H1Lane::for_endpoint(self.endpoints.get(i)?).map(Box::new))
    }

    /// Returns a lane to endpoint `i`'s idle pool.
    fn put_lane(&self, i: usize, lane: Box<H1Lane>) {
        if let Some(Ok(mut idle)) = self.lanes.get(i).map(Mutex::lock) {
            idle.push(lane);
        }
    }

    /// Runs one 2025-11-25 round trip of scenario `idx` on a pooled session
    /// (a new session is opened as `principal` when the pool is empty; its
    /// handshake legs join this round trip's legs). The pool is
    /// `principal`'s own for a closed-model user, the shared one for the
    /// open model (`user` none). Its ids continue the session's own
    /// sequence; its marker goes where [`Self::mark`] said.
    pub async fn legacy_round_trip(
        &self,
        http: &reqwest::Client,
        idx: usize,
        spec: &ScenarioSpec,
        principal: usize,
        user: Option<usize>,
    ) -> Option<(RoundTrip, u64)> {
        if !self.reserve() {
            return None;
        }
        let started = Instant::now();
        let pool = match user {
            Some(_) => self.legacy_pools.get(principal)?,
            None => &self.shared_pool,
        };
        let pooled = pool.lock().ok().and_then(|mut p| p.pop());
        let (mut client, mut handshake) = match pooled {
            Some(c) => (c, Vec::new()),
            None => {
                let cfg = LegacyConfig {
                    timeout: self.plan.timeout,
                    seed: self.plan.seed ^ self.next_seq(),
                    // Servers may push a call's elicitations on the session's
                    // standalone GET stream: serve them from there too.
                    get_stream: true,
                    ..LegacyConfig::default()
                };
                // New sessions are spread over the targets (a session
                // stays where it began).
                let n = self.next_seq() as usize % self.endpoints.len().max(1);
                let endpoint = self.endpoint_as(n, principal);
                match LegacyClient::connect(http.clone(), endpoint, cfg).await {
                    Ok(c) => {
                        let legs = c.handshake_legs().to_vec();
                        (c, legs)
                    }
                    Err(e) => {
                        return Some((legacy_failure(spec, &e, started.elapsed()), 1));
                    }
                }
            }
        };
        let pinned = (!spec.answers.is_empty()).then_some(&spec.answers);
        let n = self.next_seq();
        let mut arguments = spec.arguments.clone();
        let marked = match self.markers.get(idx).and_then(|m| m.as_ref()) {
            Some(arg) => match arguments.get_mut(arg) {
                Some(serde_json::Value::String(v)) => {
                    crate::client::marker::append_str(v, n);
                    true
                }
                _ => false,
            },
            None => false,
        };
        let mut rt = client
            .call_tool_as(
                &spec.tool,
                arguments,
                &policy_for(spec),
                expectations_for(spec),
                pinned,
                Some((n, marked)),
            )
            .await;
        rt.name = spec.name.clone();
        rt.total = started.elapsed();
        if !handshake.is_empty() {
            handshake.append(&mut rt.legs);
            rt.legs = handshake;
        }
        // A session lives where its `initialize` was answered: every leg
        // with a reply is that instance's.
        if let Some(by) = client.answered_by() {
            let id = self.recorder.instances().intern(by.as_bytes());
            rt.instances = rt
                .legs
                .iter()
                .map(|l| match l.result {
                    LegResult::Transport(_) | LegResult::Timeout => UNKNOWN,
                    _ => id,
                })
                .collect();
        }
        if rt.outcome.is_ok()
            && let Ok(mut pool) = pool.lock()
        {
            pool.push(client);
        }
        Some((rt, 1))
    }

    /// Runs one round trip of scenario `idx` (either generation) over
    /// `http`, as closed-model user `user`'s principal (`None`: the next
    /// principal in turn).
    pub async fn round_trip(
        &self,
        http: &reqwest::Client,
        idx: usize,
        user: Option<usize>,
    ) -> Option<(RoundTrip, u64)> {
        let spec = self.plan.scenarios.get(idx)?;
        let _in_flight = self.recorder.begin();
        let principal = self.principal_for(user);
        if spec.is_legacy() {
            // Boxed: a 2025-11-25 round trip's future (reqwest, a session)
            // is twice an MRTR one's, and held inline it would make every
            // round trip's future that big, cold cache lines with hundreds
            // of users in flight.
            Box::pin(self.legacy_round_trip(http, idx, spec, principal, user)).await
        } else {
            self.modern_round_trip(http, idx, principal).await
        }
    }

    /// Ends every pooled legacy session (DELETE), best effort and bounded.
    pub async fn close_legacy_sessions(&self) {
        let clients: Vec<LegacyClient> = self
            .legacy_pools
            .iter()
            .chain(std::iter::once(&self.shared_pool))
            .flat_map(|pool| {
                pool.lock()
                    .map(|mut p| std::mem::take(&mut *p))
                    .unwrap_or_default()
            })
            .collect();
        for c in clients {
            let _ = tokio::time::timeout(Duration::from_secs(2), c.close()).await;
        }
    }
}

/// One principal's tokens, and as `Authorization` values for the lanes
/// (`None`: a token is not a header value; its round trips use reqwest).
#[derive(Debug)]
struct Principal {
    token: String,
    other: String,
    auth: Option<(HeaderValue, HeaderValue)>,
}

impl Principal {
    fn new(token: &str, other: &str) -> Principal {
        Principal {
            auth: bearer(token).zip(bearer(other)),
            token: token.to_owned(),
            other: other.to_owned(),
        }
    }
}

/// A round trip that failed before its tool call (the legacy handshake).
fn legacy_failure(
    spec: &ScenarioSpec,
    e: &crate::client::legacy::LegacyError,
    elapsed: Duration,
) -> RoundTrip {
    use crate::client::legacy::LegacyError;
    use crate::client::{ErrorClass, Leg, LegResult, Outcome};
    let (class, result) = match e {
        LegacyError::Timeout { .. } => (ErrorClass::Timeout, LegResult::Timeout),
        LegacyError::Transport { why, .. } => {
            (ErrorClass::Transport, LegResult::Transport(why.clone()))
        }
        LegacyError::Http { status, .. } => {
            (ErrorClass::HttpError, LegResult::Http { status: *status })
        }
        LegacyError::Rpc { code, .. } => (
            ErrorClass::ServerError,
            LegResult::RpcError {
                code: *code,
                reason: None,
            },
        ),
        LegacyError::Protocol { .. } => (
            ErrorClass::ProtocolViolation,
            LegResult::Http { status: 200 },
        ),
    };
    let mut rt = RoundTrip::new(spec.name.clone());
    rt.legs.push(Leg::failed("initialize", result, elapsed));
    rt.total = elapsed;
    rt.outcome = Outcome::unexpected(class, e.to_string());
    rt
}

/// A smooth weighted round robin over the plan's scenarios: index `n` of
/// the returned sequence picks the scenario of the `n`-th round trip.
pub fn weighted_order(scenarios: &[ScenarioSpec]) -> Vec<usize> {
    let total: i64 = scenarios.iter().map(|s| i64::from(s.weight)).sum();
    let mut current = vec![0i64; scenarios.len()];
    let mut order = Vec::with_capacity(total.max(0) as usize);
    for _ in 0..total {
        let mut best = 0;
        for (i, s) in scenarios.iter().enumerate() {
            current[i] += i64::from(s.weight);
            if current[i] > current[best] {
                best = i;
            }
        }
        current[best] -= total;
        order.push(best);
    }
    order
}

/// How a load round trip's legs travel: each one under the hard request
/// cap, MCP calls rotated over the targets (the first to the next target in
/// turn, each later call to the one after), over a pooled [`H1Lane`] when
/// the endpoint allows, else reqwest; each leg's answering instance noted.
struct Lanes<'a> {
    ctx: &'a LoadContext,
    http: &'a reqwest::Client,
    /// How many targets.
    k: usize,
    /// The target the next MCP call goes to.
    at: usize,
    /// The principal the round trip runs as.
    principal: usize,
    /// MCP calls sent so far.
    calls: u32,
    /// The lane held, and the endpoint it is for (`None` inside: that
    /// endpoint needs reqwest).
    lane: Option<(usize, Option<Box<H1Lane>>)>,
    /// The answering instance of each leg, in order.
    instances: Vec<u16>,
    /// Requests reserved under the cap.
    reserved: u64,
}

/// The request cap was reached (or the run stopped): the round trip is
/// abandoned unrecorded.
struct CapReached;

impl Exchange for Lanes<'_> {
    type Stop = CapReached;

    fn before(&mut self, out: &Outgoing) -> Result<(), CapReached> {
        if !self.ctx.reserve() {
            return Err(CapReached);
        }
        self.reserved += 1;
        if matches!(out.target, Target::Mcp) {
            if self.calls > 0 {
                self.at = (self.at + 1) % self.k;
            }
            self.calls += 1;
        }
        Ok(())
    }

    async fn send(&mut self, out: Outgoing) -> LegReply {
        let (ctx, at) = (self.ctx, self.at);
        if self.lane.as_ref().map(|(i, _)| *i) != Some(at) {
            if let Some((i, Some(l))) = self.lane.take() {
                ctx.put_lane(i, l);
            }
            self.lane = Some((at, ctx.take_lane(at)));
        }
        let table = ctx.recorder.instances();
        let auth = ctx
            .principals
            .get(self.principal)
            .and_then(|p| p.auth.as_ref());
        let on_lane = self
            .lane
            .as_mut()
            .and_then(|(_, l)| l.as_mut())
            .zip(auth)
            .and_then(|(l, (primary, other))| {
                l.authorize(primary, other);
                l.uri_for(&out.target).map(|uri| (l, uri))
            });
        let (reply, by) = match on_lane {
            Some((l, uri)) => {
                let reply = l.exchange_at(uri, out, ctx.plan.timeout).await;
                (reply, l.answered_by().map(|b| table.intern(b)))
            }
            None => {
                let endpoint = ctx.endpoint_as(at, self.principal);
                // Boxed for the same reason as a legacy round trip: the
                // lane's future is the common one.
                let (reply, by) = Box::pin(crate::client::http::exchange_answered(
                    self.http,
                    &endpoint,
                    &out,
                    ctx.plan.timeout,
                ))
                .await;
                (reply, by.map(|b| table.intern(b.as_bytes())))
            }
        };
        self.instances.push(by.unwrap_or(UNKNOWN));
        reply
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::spec::parse::parse_plan;
    use crate::load::spec::principals::Principals;

    #[test]
    fn weights_are_honoured_and_interleaved() {
        let p = parse_plan(
            "[scenarios.form-accept]\nweight = 3\n[scenarios.tamper]\nweight = 1\n",
            "w.toml",
            "w",
        )
        .unwrap();
        let order = weighted_order(&p.scenarios);
        assert_eq!(order.len(), 4);
        let tamper = p.scenarios.iter().position(|s| s.name == "tamper").unwrap();
        assert_eq!(order.iter().filter(|&&i| i == tamper).count(), 1);
        let accept = 1 - tamper;
        assert_eq!(order.iter().filter(|&&i| i == accept).count(), 3);
    }

    #[test]
    fn policies_match_kinds() {
        let p = parse_plan(
            "[scenarios.tamper]\n[scenarios.replay]\n[scenarios.form-decline]\n[scenarios.url-flow]\n",
            "k.toml",
            "k",
        )
        .unwrap();
        let by = |n: &str| policy_for(p.scenarios.iter().find(|s| s.name == n).unwrap());
        assert!(matches!(by("tamper"), AnswerPolicy::TamperState(_)));
        assert_eq!(by("replay"), AnswerPolicy::ReplayState);
        assert_eq!(by("form-decline"), AnswerPolicy::Decline);
        assert_eq!(by("url-flow"), AnswerPolicy::AcceptValid);
        let url = p.scenarios.iter().find(|s| s.name == "url-flow").unwrap();
        assert_eq!(url.tool, "connect_billing");
    }

    fn context(plan: &str, principals: Option<Principals>) -> LoadContext {
        let mut p = parse_plan(plan, "p.toml", "p").unwrap();
        if let Some(who) = principals {
            p.target.principals = who;
        }
        let rec = Arc::new(Recorder::new(Duration::from_secs(1), &[]).unwrap());
        LoadContext::new(p, "http://127.0.0.1:9/mcp".into(), rec)
    }

    #[test]
    fn each_user_runs_as_its_own_principal_and_never_as_the_other() {
        let ctx = context("[load]\nusers = 64\n[scenarios.form-accept]\n", None);
        assert_eq!(ctx.principal_count(), 64);
        let mine: Vec<&str> = (0..64)
            .map(|u| ctx.principal_token(ctx.principal_for(Some(u))))
            .collect();
        let distinct: std::collections::HashSet<&&str> = mine.iter().collect();
        assert_eq!(distinct.len(), 64, "{mine:?}");
        for (u, own) in mine.iter().enumerate() {
            let e = ctx.endpoint_as(0, ctx.principal_for(Some(u)));
            assert_eq!(e.primary_token, *own);
            assert_ne!(e.other_token.as_deref(), Some(*own));
        }
        let one = context(
            "[target]\ntoken = \"alice\"\n[load]\nusers = 8\n[scenarios.form-accept]\n",
            None,
        );
        assert_eq!(one.principal_count(), 1);
        assert_eq!(one.principal_token(one.principal_for(Some(5))), "alice");
    }

    #[test]
    fn file_tokens_are_taken_round_robin() {
        let tokens: Vec<String> = ["t-a", "t-b", "mallory"].map(String::from).to_vec();
        let ctx = context(
            "[load]\nusers = 7\n[scenarios.form-accept]\n",
            Some(Principals::File {
                path: "tokens.txt".into(),
                tokens,
            }),
        );
        let by_user: Vec<&str> = (0..7)
            .map(|u| ctx.principal_token(ctx.principal_for(Some(u))))
            .collect();
        assert_eq!(
            by_user,
            ["t-a", "t-b", "mallory", "t-a", "t-b", "mallory", "t-a"]
        );
        let open: Vec<&str> = (0..4)
            .map(|_| ctx.principal_token(ctx.principal_for(None)))
            .collect();
        assert_eq!(
            open,
            ["t-a", "t-b", "mallory", "t-a"],
            "open model: in turn"
        );
        // The plan's other principal is in the file: its own user probes
        // as another token of the file.
        let e = ctx.endpoint_as(0, 2);
        assert_eq!(e.primary_token, "mallory");
        assert_eq!(e.other_token.as_deref(), Some("t-a"));
    }

    #[test]
    fn the_cap_refuses_requests() {
        let mut p = parse_plan("[scenarios.form-accept]\n", "c.toml", "c").unwrap();
        p.max_requests = 2;
        let rec = Arc::new(Recorder::new(Duration::from_secs(1), &[]).unwrap());
        let ctx = LoadContext::new(p, "http://127.0.0.1:9/mcp".into(), rec);
        assert!(ctx.reserve() && ctx.reserve());
        assert!(!ctx.reserve());
        assert!(ctx.cap_reached.load(Ordering::Relaxed));
    }
}
